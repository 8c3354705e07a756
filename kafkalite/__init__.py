"""kafkalite: a Kafka-compatible broker for tests and CI.

``with kafkalite.running() as broker: broker.bootstrap`` starts a broker process (see
:mod:`kafkalite.launcher`); ``kafkalite.controls`` drives its test controls; the pytest plugin is
:mod:`kafkalite.pytest_plugin`. The broker itself lives in the subpackages ``kafkalite.broker``
(the trio server), ``kafkalite.protocol`` (the sans-IO wire protocol) and ``kafkalite.storage``
(partition logs on disk); ``python -m kafkalite`` runs it.

Rule: importing this package costs nothing. The broker's own start (``python -m kafkalite``)
imports it first, so the launcher's names (which pull in subprocess, tempfile, threading) are
imported on first use through the module ``__getattr__`` below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .controls import ControlFailed, Controls, WaitFailed
    from .launcher import READY_PATTERN, Broker, broker_args, broker_command, parse_ready_line, running, start

__all__ = ["Broker", "running", "start", "broker_command", "broker_args", "parse_ready_line", "READY_PATTERN",
           "Controls", "ControlFailed", "WaitFailed"]


def __getattr__(name: str) -> Any:
    # Everything the launcher defines, public or not (tests use its private helpers too).
    if name.startswith("__") or name == "launcher":
        raise AttributeError(f"module 'kafkalite' has no attribute {name!r}")
    launcher = importlib.import_module(".launcher", __name__)
    try:
        return getattr(launcher, name)
    except AttributeError:
        raise AttributeError(f"module 'kafkalite' has no attribute {name!r}") from None
