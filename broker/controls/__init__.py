"""Test controls: named operations a test performs on a running broker to make it misbehave as a
Kafka cluster can (a leader moves, a node goes down, a request fails, time jumps).

A control is `async def fn(broker, **arguments) -> JSON-able result`, registered once with
`@control("name")` in a module of this package listed in `MODULES`. The HTTP endpoint, the
Python client and the `kafkalite control` command all reach controls through `invoke()`, so this
table is the only list of controls: a control added here is reachable from every language.

Arguments are keyword-only and JSON-able (str, int, float, bool, None, lists of those). A control
that refuses its arguments (an unknown topic, a node id out of range) raises `ControlError`; the
endpoint answers that with its text and status 400, never with a traceback. A control that waits
for a condition (broker.controls.waits) and finds it unmet raises `ControlUnmet`: status 408 when
its time ran out, 409 when what it expected not to happen happened, with the state it last saw."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

if TYPE_CHECKING:
    from ..state import Broker

ControlFn = Callable[..., Awaitable[Any]]

# Modules whose @control functions make up the table, imported on first use.
MODULES: list[str] = ["faults", "clock", "topology", "reset", "request_log", "snapshot", "seed",
                     "quotas", "reassignments", "telemetry", "waits", "records", "report", "chaos",
                     "delivery_audit"]


@dataclass(frozen=True)
class Control:
    name: str
    fn: ControlFn
    # the keyword arguments the control takes, with their defaults (inspect.Parameter.empty: required)
    parameters: dict[str, Any]
    doc: str
    # each argument's JSON type as the clients of other languages declare it (json_type), None: any
    types: dict[str, str | None]


CONTROLS: dict[str, Control] = {}


class ControlError(Exception):
    """A control refused its arguments; the text says why and goes back to the caller."""


class ControlUnmet(Exception):
    """A control's condition did not hold: `status` (408: not within its timeout; 409: what it
    expected not to happen did), `error` says what, `state` is what the broker last saw, shaped
    so that a test failure says why."""

    def __init__(self, status: int, error: str, state: Any):
        super().__init__(error)
        self.status = status
        self.error = error
        self.state = state


def is_int(value: Any) -> bool:
    """A JSON integer argument (true and false are not numbers here, though bool is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def control(name: str) -> Callable[[ControlFn], ControlFn]:
    def deco(fn: ControlFn) -> ControlFn:
        if name in CONTROLS:
            raise ValueError(f"control {name!r} registered twice")
        signature = list(inspect.signature(fn).parameters.values())[1:]
        params = {p.name: p.default for p in signature}
        CONTROLS[name] = Control(name, fn, params, inspect.getdoc(fn) or "", {p.name: json_type(p) for p in signature})
        return fn

    return deco


# Python annotations and default types -> the JSON type names of the control table
_JSON_TYPES = {"int": "integer", "str": "string", "bool": "boolean", "float": "number", "dict": "object",
               "list[int]": "integer[]", "list[str]": "string[]", "list": "array"}


def json_type(param: inspect.Parameter) -> str | None:
    """The JSON type of a control argument: its annotation's ("int", "str | None" and
    "list[int]" read as integer, string, integer[]) or, unannotated, its default's; None when
    neither says (an argument that takes several types, like a fault's api name or key)."""
    if param.annotation is not inspect.Parameter.empty:
        text = param.annotation if isinstance(param.annotation, str) else getattr(param.annotation, "__name__", "")
        text = text.replace(" | None", "").replace("None | ", "").strip()
        return _JSON_TYPES.get(text)
    if param.default is inspect.Parameter.empty or param.default is None:
        return None
    return _JSON_TYPES.get(type(param.default).__name__)


def load_all() -> dict[str, Control]:
    for module in MODULES:
        importlib.import_module(f"{__name__}.{module}")
    return CONTROLS


async def invoke(broker: "Broker", name: str, arguments: dict[str, Any]) -> Any:
    """Runs one control on the broker's trio loop."""
    table = load_all()
    ctl = table.get(name)
    if ctl is None:
        raise ControlError(f"no control named {name!r}; known: {', '.join(sorted(table))}")
    unknown = set(arguments) - set(ctl.parameters)
    if unknown:
        raise ControlError(f"control {name!r} takes no argument(s) {', '.join(sorted(unknown))}")
    missing = [p for p, default in ctl.parameters.items()
               if default is inspect.Parameter.empty and p not in arguments]
    if missing:
        raise ControlError(f"control {name!r} needs {', '.join(missing)}")
    return await ctl.fn(broker, **arguments)
