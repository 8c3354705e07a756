"""The group coordinator: classic groups, KIP-848 consumer groups, committed offsets."""

from .coordinator import GroupCoordinator

__all__ = ["GroupCoordinator"]
