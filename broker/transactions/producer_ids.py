"""Producer id allocation that survives restarts.

Kafka hands out producer ids in blocks from the controller; we do the same against a small
file: `<data dir>/__cluster_metadata/producer_ids.json` holds the first id of the next block
not yet handed to anyone. Taking a block rewrites the file atomically (and fsyncs it) before
any id of the block is used, so a crash at any moment can only skip ids, never repeat one.
"""

from __future__ import annotations

import json
from pathlib import Path

from kafkalite.storage.files import write_atomic

BLOCK_SIZE = 1000


class ProducerIdManager:
    def __init__(self, path: Path | None, block_size: int = BLOCK_SIZE):
        self.path = path
        self.block_size = block_size
        self._next = 0
        self._block_end = 0  # exclusive
        self._persisted_next_block = self._read()

    def _read(self) -> int:
        if self.path is None or not self.path.exists():
            return 0
        try:
            return int(json.loads(self.path.read_text())["next_block"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0

    def _write(self, next_block: int) -> None:
        """Raises OSError when the block cannot be made durable (then it is not handed out)."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps({"next_block": next_block}).encode(), fsync=True)
        self._persisted_next_block = next_block

    def ensure_above(self, producer_id: int) -> None:
        """Never hand out `producer_id` or anything below it (used when replaying state)."""
        if producer_id >= self._next:
            self._next = producer_id + 1
        if self._next >= self._block_end:
            self._block_end = self._next  # next generate() takes a fresh block
        if producer_id >= self._persisted_next_block:
            self._write(producer_id + 1)

    def generate(self) -> int:
        if self._next >= self._block_end:
            start = max(self._persisted_next_block, self._next)
            self._write(start + self.block_size)
            self._next, self._block_end = start, start + self.block_size
        pid = self._next
        self._next += 1
        return pid
