"""The Python side of a broker's test controls (faults, the clock, ...), over the broker's
HTTP/JSON controls endpoint (`kafkalite --controls PORT`), with the standard library only.

    with kafkalite.running(controls=0) as broker:
        broker.controls.call("advance-clock", ms=60_000)
        broker.controls.advance_clock(ms=60_000)      # the same: `_` stands for `-`
        broker.controls.names()                       # what the broker offers

    # a broker started elsewhere; with --controls-token, its token (default: $KAFKALITE_CONTROLS_TOKEN)
    Controls("http://127.0.0.1:PORT/", token="...").call(...)

    # isolation: reset, snapshots, seeds, the request log (docs/ci-usage.md "Isolating tests")
    broker.controls.reset()
    broker.controls.snapshot(name="base"); broker.controls.restore(name="base")
    broker.controls.seed_file("fixtures/seed.json")   # records files read on this machine
    broker.controls.record_requests()
    broker.controls.requests(client_id="me").of("Produce")   # a `Requests`

A control that refuses its arguments raises `ControlFailed` with the broker's text.

From a shell: `kafkalite control [--url URL] [--token TOKEN] NAME key=value ...` (URL defaults to
$KAFKALITE_CONTROLS_URL, the token to $KAFKALITE_CONTROLS_TOKEN) prints the JSON result; a value that reads as JSON (3, true, null,
[1,2], "x") is taken as such, anything else as a string. `kafkalite control --url URL` with no
name lists the controls. `kafkalite control seed file=SEED.json` sends a seed file of this
machine (its JSON Lines records files read here) to the broker.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import builtins
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Iterator, Sequence, overload

__all__ = ["Controls", "ControlFailed", "Requests", "main"]

URL_ENV = "KAFKALITE_CONTROLS_URL"
# the broker's --controls-token reads the same variable
TOKEN_ENV = "KAFKALITE_CONTROLS_TOKEN"


class ControlFailed(Exception):
    """The broker refused or failed a control; `text` is its explanation, `status` the HTTP status."""

    def __init__(self, name: str, text: str, status: int):
        super().__init__(f"control {name}: {text}")
        self.name = name
        self.text = text
        self.status = status


class Controls:
    """The controls of one broker, reached at `url` (the `controls=` URL of its ready line);
    `token` is the broker's --controls-token (default: $KAFKALITE_CONTROLS_TOKEN, unset: none)."""

    def __init__(self, url: str, timeout: float = 30.0, token: str | None = None):
        self.url = url if url.endswith("/") else url + "/"
        self.timeout = timeout
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None

    def _request(self, path: str, name: str, body: bytes | None = None) -> Any:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.url + path, data=body, method="POST" if body is not None else "GET",
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                text = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                text = raw.decode(errors="replace") or exc.reason
            raise ControlFailed(name, str(text), exc.code) from None

    def list(self) -> list[dict[str, Any]]:
        """Every control: name, parameters ({name: {"required", "default"}}) and doc."""
        return self._request("controls", "list")["controls"]

    def names(self) -> builtins.list[str]:
        return [c["name"] for c in self.list()]

    def call(self, name: str, /, **arguments: Any) -> Any:
        """Run control `name` with these arguments and return its result."""
        body = json.dumps(arguments).encode()
        return self._request(f"controls/{urllib.parse.quote(name, safe='')}", name, body)["result"]

    def seed_file(self, path: str | os.PathLike) -> Any:
        """Apply a seed file of this machine (the broker may run elsewhere): its JSON Lines
        records files, relative to it, are read here and sent inline."""
        return self.call("seed", document=inline_seed(path))

    def requests(self, **filters: Any) -> "Requests":
        """The broker's request log (after ``record_requests()``), as :class:`Requests`;
        filters: api, client_id, topic, group_id, transactional_id, clear."""
        return Requests(self.call("requests", **filters))

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        name = attr.replace("_", "-")

        def bound(**arguments: Any) -> Any:
            return self.call(name, **arguments)

        bound.__name__ = attr
        return bound

    def __repr__(self) -> str:
        return f"Controls({self.url!r})"


def _api_name(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


class Requests(Sequence[dict]):
    """Entries of a broker's request log (the `requests` control), oldest first, with helpers
    for assertions:

        broker.controls.record_requests()
        ... run the client ...
        log = broker.controls.requests(client_id="my-producer")
        assert log.of("InitProducerId")                      # it asked for a producer id
        assert all(e["producer_id"] >= 0 for e in log.of("Produce"))   # idempotent
        assert len(log.of("OffsetCommit").where(group_id="billing")) == 2
    """

    def __init__(self, entries: builtins.list[dict]):
        self.entries = entries

    @overload
    def __getitem__(self, index: int) -> dict: ...

    @overload
    def __getitem__(self, index: slice) -> "Requests": ...

    def __getitem__(self, index: int | slice) -> "dict | Requests":
        if isinstance(index, slice):
            return Requests(self.entries[index])
        return self.entries[index]

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.entries)

    def __eq__(self, other: object) -> bool:
        return self.entries == (other.entries if isinstance(other, Requests) else other)

    __hash__ = None  # type: ignore[assignment]

    def of(self, *apis: str | int) -> "Requests":
        """The entries of these APIs (Kafka's name in any case, with or without _ and -, or the key)."""
        keys = {a for a in apis if isinstance(a, int)}
        names = {_api_name(a) for a in apis if isinstance(a, str)}
        return Requests([e for e in self.entries if e["api_key"] in keys or _api_name(e["api"]) in names])

    def where(self, **fields: Any) -> "Requests":
        """The entries whose fields have these values (topic=NAME: entries naming that topic)."""
        topic = fields.pop("topic", None)
        return Requests([e for e in self.entries
                         if all(e.get(k) == v for k, v in fields.items())
                         and (topic is None or topic in (e.get("topics") or {}))])

    def apis(self) -> builtins.list[str]:
        """The API names in the order received."""
        return [e["api"] for e in self.entries]

    def __repr__(self) -> str:
        return f"Requests({self.apis()!r})"


def inline_seed(path: str | os.PathLike) -> dict:
    """A seed file's document with every records file (JSON Lines, relative to the seed file)
    read into the document, so that it means the same on a broker that cannot read those files."""
    from pathlib import Path

    seed_path = Path(path).expanduser()
    document = json.loads(seed_path.read_text(encoding="utf-8"))
    for topic in document.get("topics") or [] if isinstance(document, dict) else []:
        records = topic.get("records") if isinstance(topic, dict) else None
        if isinstance(records, str):
            file = Path(records).expanduser()
            if not file.is_absolute():
                file = seed_path.resolve().parent / file
            topic["records"] = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()
                                if line.strip()]
    return document


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kafkalite control",
                                description="Run a test control of a running kafkalite broker and print its "
                                            "JSON result; without NAME, list the controls.")
    p.add_argument("--url", default=None,
                   help=f"the broker's controls URL (its ready line's controls=...) [{URL_ENV}]")
    p.add_argument("--token", default=None,
                   help=f"the broker's --controls-token, when it has one [{TOKEN_ENV}]")
    p.add_argument("name", nargs="?", help="the control, e.g. advance-clock")
    p.add_argument("arguments", nargs="*", metavar="KEY=VALUE",
                   help="arguments; a value that reads as JSON is taken as such (3, true, null, [1,2])")
    args = p.parse_args(argv)
    url = args.url or os.environ.get(URL_ENV)
    if not url:
        print(f"kafkalite control: give --url or set {URL_ENV}", file=sys.stderr)
        return 2
    arguments: dict[str, Any] = {}
    for item in args.arguments:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"kafkalite control: expected KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        arguments[key.replace("-", "_")] = _value(value)
    if args.name == "seed" and "file" in arguments:  # a seed file of this machine, sent inline
        try:
            arguments = {"document": inline_seed(str(arguments.pop("file")))}
        except (OSError, ValueError) as exc:
            print(f"kafkalite control: cannot read the seed file: {exc}", file=sys.stderr)
            return 2
    controls = Controls(url, token=args.token)
    try:
        if args.name is None:
            for ctl in controls.list():
                params = " ".join(n if spec["required"] else f"[{n}={json.dumps(spec['default'])}]"
                                  for n, spec in ctl["parameters"].items())
                first = ctl["doc"].splitlines()[0] if ctl["doc"] else ""
                print(f"{ctl['name']} {params}".rstrip() + (f"\n    {first}" if first else ""))
            return 0
        result = controls.call(args.name, **arguments)
    except ControlFailed as exc:
        print(f"kafkalite control: {exc.text}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"kafkalite control: cannot reach {url}: {getattr(exc, 'reason', exc)}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0
