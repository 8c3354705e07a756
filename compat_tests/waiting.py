"""Waiting on a condition instead of sleeping: one helper for the whole suite."""

from __future__ import annotations

import os
import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float = 10.0, interval: float = 0.05, what: str = "") -> T:
    """Call `condition` until it returns a true value, which is returned; a false value or an
    AssertionError means not yet. Past `timeout` seconds the last AssertionError is raised, or
    one naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = condition()
            if result:
                return result
            failure: AssertionError | None = None
        except AssertionError as e:
            failure = e
        if time.monotonic() > deadline:
            if failure is not None:
                raise failure
            raise AssertionError(f"not within {timeout}s: {what or condition}")
        time.sleep(interval)


def wait_for_path(path: str, timeout: float = 60.0) -> None:
    """Block until `path` exists: how a test tells a client driver that a condition it checked
    from outside (say, the broker aborted a transaction) now holds."""
    wait_until(lambda: os.path.exists(path), timeout, what=f"{path} to appear")


def wait_for_poll_error(consumer, error: str, timeout: float, what: str, seen: list[str] | None = None) -> list[str]:
    """Poll a confluent-kafka consumer until an error named `error` has come, from poll() or
    already in `seen` (which the consumer's error_cb may fill too); the error names seen."""
    names = seen if seen is not None else []

    def arrived() -> bool:
        m = consumer.poll(0.5)
        if m is not None and m.error() is not None:
            names.append(m.error().name())
        return error in names

    wait_until(arrived, timeout=timeout, what=what)
    return names
