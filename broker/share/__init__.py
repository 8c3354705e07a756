"""Share groups (KIP-932): the share coordinator and the share-partition state."""

from .coordinator import ShareCoordinator, ShareError

__all__ = ["ShareCoordinator", "ShareError"]
