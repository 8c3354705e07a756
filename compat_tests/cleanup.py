"""Processes a test starts (group members, share consumers), killed however the test ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar


class Killable(Protocol):
    def kill(self) -> None: ...


K = TypeVar("K", bound=Killable)


@contextmanager
def killed_at_end() -> Iterator[list[K]]:
    """A list the test appends what it starts to; each is killed when the block ends."""
    processes: list[K] = []
    try:
        yield processes
    finally:
        for p in processes:
            p.kill()
