"""The group coordinator: classic groups, KIP-848 consumer groups, committed offsets.

`GroupCoordinator` is imported on first use: the handlers import `states` and the streams
types, and a broker that serves no group request never loads the coordinator (broker.services)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

__all__ = ["GroupCoordinator"]


def __getattr__(name: str):
    if name == "GroupCoordinator":
        from .coordinator import GroupCoordinator

        return GroupCoordinator
    raise AttributeError(name)
