"""The share-partitions' state in `__share_group_state` (records.py's format), through the
coordinators' InternalTopicStore.

Rules:
- One key per share-partition, (group, topic id, partition); the state partition it lives on
  is chosen by Kafka's SharePartitionKey string "group:topicId:partition".
- The topic is created on first write (compacted, share.coordinator.state.topic.num.partitions
  partitions). Every write is a whole ShareSnapshot; a share-partition is written only when
  its (start offset, state batches, state epoch) differ from what was last written, and
  `persisted` is moved only after the write returned: a failed write (CoordinatorWriteError)
  leaves the state to be written with the share-partition's next change.
- A null value deletes a share-partition's state. On load the last snapshot of a key wins, an
  update lays its state batches over it (Kafka writes updates between snapshots); a state never
  initialised (start offset -1) or of a topic that no longer exists is not restored, and an
  acquisition lock does not survive a restart (SharePartition.restore).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Callable

from ..internal_store import InternalTopicStore, StoredRecord
from ..internal_topics import SHARE_GROUP_STATE_TOPIC
from . import records as rec
from .partition import SharePartition, StateBatch

log = logging.getLogger("kafkalite.share")

SharePartitionKey = tuple[str, uuid.UUID, int]  # (group id, topic id, partition)


def _persisted_form(sp: SharePartition) -> tuple[Any, ...]:
    return (sp.start_offset, tuple(sp.state_batches()), sp.state_epoch)


class ShareStateStore:
    def __init__(self, broker: Any, *, clock: Callable[[], int]) -> None:
        config = broker.config
        self.clock = clock
        self.topic_store = InternalTopicStore(
            broker.cluster, SHARE_GROUP_STATE_TOPIC, configs={"cleanup.policy": "compact"}, clock=clock,
            num_partitions=lambda: max(1, config["share.coordinator.state.topic.num.partitions"]))

    def write(self, key: SharePartitionKey, sp: SharePartition, *, created_ms: int) -> None:
        """Write the share-partition's snapshot if it changed since the last write. Raises
        CoordinatorWriteError when the write fails."""
        state = _persisted_form(sp)
        if sp.persisted == state:
            return
        now = self.clock()
        value = rec.snapshot_value(rec.ShareState(
            snapshot_epoch=0, state_epoch=sp.state_epoch, leader_epoch=0, start_offset=sp.start_offset,
            create_timestamp=created_ms, write_timestamp=now, batches=state[1],
            delivery_complete_count=sp.delivery_complete_count()))
        self._append(key, value)
        sp.persisted = state

    def delete(self, key: SharePartitionKey) -> None:
        """The tombstone of a share-partition's state. Raises CoordinatorWriteError when the write fails."""
        self._append(key, None)

    def _append(self, key: SharePartitionKey, value: bytes | None) -> None:
        group_id, topic_id, index = key
        self.topic_store.append(f"{group_id}:{topic_id}:{index}",
                                [(rec.snapshot_key(group_id, topic_id, index), value)])

    def load(self, topic_exists: Callable[[uuid.UUID], bool]) -> dict[SharePartitionKey, tuple[SharePartition, int]]:
        """Every share-partition the topic holds, with its creation time."""
        states: dict[SharePartitionKey, rec.ShareState | None] = {}

        def on_record(record: StoredRecord) -> None:
            k = rec.decode_key(record.key)
            key = (k.group_id, k.topic_id, k.partition)
            if record.value is None:
                states[key] = None
            elif k.kind == rec.SHARE_SNAPSHOT_KEY:
                states[key] = rec.decode_snapshot_value(record.value)
            elif (old := states.get(key)) is not None:
                _epoch, start, batches = rec.decode_update_value(record.value)
                states[key] = old._replace(start_offset=start if start >= 0 else old.start_offset,
                                           batches=_merge(old.batches, batches))

        self.topic_store.replay(on_record)
        out: dict[SharePartitionKey, tuple[SharePartition, int]] = {}
        for key, st in states.items():
            if st is None or st.start_offset < 0 or not topic_exists(key[1]):
                continue  # deleted, never initialised (Kafka writes -1 until the first fetch), or topic gone
            sp = SharePartition.restore(st.start_offset, st.batches, state_epoch=st.state_epoch)
            sp.persisted = _persisted_form(sp)
            out[key] = (sp, st.create_timestamp)
        if out:
            log.info("loaded %d share-partition(s) from %s", len(out), SHARE_GROUP_STATE_TOPIC)
        return out


def _merge(old: tuple[StateBatch, ...], new: tuple[StateBatch, ...]) -> tuple[StateBatch, ...]:
    """State batches of an update laid over a snapshot's: per offset, the update wins."""
    per: dict[int, StateBatch] = {}
    for b in (*old, *new):
        for off in range(b.first_offset, b.last_offset + 1):
            per[off] = StateBatch(off, off, b.state, b.delivery_count)
    return tuple(per[o] for o in sorted(per))
