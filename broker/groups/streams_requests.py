"""The KIP-1071 streams group protocol's request: StreamsGroupHeartbeat (the state machine is
streams.py's StreamsGroup).

Rules:
- Only a member joining with epoch 0 creates a group; an empty classic group is replaced by a
  streams group then (its offsets stay); any other group of another type answers
  GROUP_ID_NOT_FOUND ("is not a streams group"), as Kafka refuses it.
- The broker's part of KIP-1071: the internal topics a topology describes are created as
  CreateTopics would create them (names and configs validated; a bad one is not created and
  the group keeps reporting it missing), at most INTERNAL_TOPIC_PARTITIONS_MAX partitions per
  heartbeat (a topology is client input).
- What the heartbeat changed is written before it is answered; a failed write answers
  NOT_COORDINATOR, and a group the heartbeat created is not kept.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from ..cluster import topic_name_error
from ..internal_store import CoordinatorWriteError
from ..settings.topic_keys import validate_topic_configs
from ..settings.values import ConfigError
from .classic import ClassicGroup
from .persistence import GroupPersistence
from .streams import HeartbeatResult as StreamsResult
from .streams import StreamsGroup, TopicInfo

log = logging.getLogger("kafkalite.groups")

# the most partitions one StreamsGroupHeartbeat may have created (admin_topics' MAX_PARTITIONS_PER_REQUEST)
INTERNAL_TOPIC_PARTITIONS_MAX = 10_000


class StreamsRequests(GroupPersistence):
    def streams_group_heartbeat(self, *, group_id: str, member_id: str, member_epoch: int, **kwargs: Any) -> StreamsResult:
        """One StreamsGroupHeartbeat (the arguments of StreamsGroup.heartbeat); the group is
        created by a joining member, replaces an empty classic group (offsets stay), and is
        refused for a consumer group as Kafka refuses it."""
        group = self.groups.get(group_id)
        if isinstance(group, ClassicGroup) and group.is_empty() and member_epoch == 0:
            try:
                self._delete_group_state(group, keep_offsets=True)
            except CoordinatorWriteError:
                return StreamsResult(ErrorCode.not_coordinator)
            group = None
        if group is not None and not isinstance(group, StreamsGroup):
            return StreamsResult(ErrorCode.group_id_not_found, f"Group {group_id} is not a streams group.")
        if group is None:
            if member_epoch != 0:
                return StreamsResult(ErrorCode.group_id_not_found, f"Streams group {group_id} not found.")
            group = self._new_streams(group_id)
            created = True
        else:
            created = False
        self._apply_group_timeouts(group, "streams")

        def lookup(name: str) -> int | None:
            topic = self.cluster.topics.get(name)
            return len(topic.partitions) if topic is not None and topic.partitions else None

        def create(missing: dict[str, TopicInfo], partitions: dict[str, int]) -> None:
            # the broker's part of KIP-1071: internal topics as the topology describes them, within
            # the partition budget CreateTopics allows one request (a topology is client input)
            if sum(partitions.get(n, 0) for n in missing) > INTERNAL_TOPIC_PARTITIONS_MAX:
                log.warning("streams group %s: internal topics %s not created: more than %d partitions",
                            group_id, sorted(missing), INTERNAL_TOPIC_PARTITIONS_MAX)
                return
            for name, info in sorted(missing.items()):
                if name in self.cluster.topics or partitions.get(name, 0) <= 0:
                    continue
                # names and configs are checked as CreateTopics checks them: a bad one is not created
                # and the group keeps reporting it missing, as Kafka's failed auto-creation leaves it
                reason = topic_name_error(name)
                try:
                    configs = validate_topic_configs(dict(info.configs)) if reason is None else {}
                except ConfigError as exc:
                    reason = str(exc)
                if reason is not None:
                    log.warning("streams group %s: internal topic %r not created: %s", group_id, name, reason)
                    continue
                self.cluster.create_topic(name, partitions[name], configs)
                log.info("streams group %s: created internal topic %s", group_id, name)

        result = group.heartbeat(member_id=member_id, member_epoch=member_epoch, lookup=lookup,
                                 names=lambda: list(self.cluster.topics), create=create, now=self.clock(), **kwargs)
        if not self._after_heartbeat(group, created):
            return StreamsResult(ErrorCode.not_coordinator)
        return result

