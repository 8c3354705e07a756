"""Share groups (KIP-932): the share coordinator and the share-partition state.

The coordinator is imported on first use (a broker that serves no share group request never
loads it; broker.services)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .coordinator import ShareCoordinator, ShareError

__all__ = ["ShareCoordinator", "ShareError"]


def __getattr__(name: str):
    if name in __all__:
        from . import coordinator

        return getattr(coordinator, name)
    raise AttributeError(name)
