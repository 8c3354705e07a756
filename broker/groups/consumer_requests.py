"""The KIP-848 consumer group protocol's request: ConsumerGroupHeartbeat (the state machine is
consumer.py's ConsumerGroup).

Rules:
- A request Kafka's validation refuses (throwIfConsumerGroupHeartbeatRequestIsInvalid) answers
  INVALID_REQUEST with Kafka's message, before any group is looked at.
- Only a member joining with epoch 0 creates a group; an empty classic group is replaced by a
  consumer group then (its offsets stay). A non-empty classic group and a streams group answer
  GROUP_ID_NOT_FOUND ("is not a consumer group").
- What the heartbeat changed is written before it is answered; a failed write answers
  NOT_COORDINATOR, and a group the heartbeat created is not kept (`_after_heartbeat`).
"""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from ..internal_store import CoordinatorWriteError
from .classic import ClassicGroup
from .consumer import HeartbeatResult
from .persistence import GroupPersistence
from .streams import StreamsGroup


class ConsumerRequests(GroupPersistence):
    def consumer_group_heartbeat(self, *, group_id: str, member_id: str, member_epoch: int,
                                 instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                                 subscribed_topic_names: list[str] | None, subscribed_topic_regex: str | None,
                                 server_assignor: str | None, owned: dict[uuid.UUID, set[int]] | None,
                                 client_id: str, client_host: str, api_version: int) -> HeartbeatResult:
        invalid = _validate_heartbeat(group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                                      subscribed_topic_names, subscribed_topic_regex, owned, api_version)
        if invalid is not None:
            return HeartbeatResult(ErrorCode.invalid_request, invalid, member_id=member_id or None,
                                   member_epoch=member_epoch)
        group = self.groups.get(group_id)
        if isinstance(group, ClassicGroup):
            if group.is_empty() and member_epoch == 0:
                try:
                    self._delete_group_state(group, keep_offsets=True)
                except CoordinatorWriteError:
                    return HeartbeatResult(ErrorCode.not_coordinator, member_id=member_id or None,
                                           member_epoch=member_epoch)
                group = None
            else:
                return HeartbeatResult(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.",
                                       member_id=member_id or None, member_epoch=member_epoch)
        elif isinstance(group, StreamsGroup):
            return HeartbeatResult(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.",
                                   member_id=member_id or None, member_epoch=member_epoch)
        if group is None:
            if member_epoch != 0:
                # only a member joining (epoch 0) creates a group; Kafka's answer otherwise
                return HeartbeatResult(ErrorCode.group_id_not_found, f"Consumer group {group_id} not found.",
                                       member_id=member_id or None, member_epoch=member_epoch)
            group = self._new_consumer(group_id)
            created = True
        else:
            created = False
        self._apply_group_timeouts(group, "consumer")
        result = group.heartbeat(member_id=member_id, member_epoch=member_epoch, instance_id=instance_id,
                                 rack_id=rack_id, rebalance_timeout_ms=rebalance_timeout_ms, client_id=client_id,
                                 client_host=client_host, subscribed_topic_names=subscribed_topic_names,
                                 subscribed_topic_regex=subscribed_topic_regex, server_assignor=server_assignor,
                                 owned=owned, topics=self._topic_view(), now=self.clock())
        if not self._after_heartbeat(group, created):
            return HeartbeatResult(ErrorCode.not_coordinator, member_id=member_id or None, member_epoch=member_epoch)
        return result



def _validate_heartbeat(group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                        rack_id: str | None, rebalance_timeout_ms: int | None, subscribed_topic_names: list[str] | None,
                        subscribed_topic_regex: str | None, owned: dict[uuid.UUID, set[int]] | None,
                        api_version: int) -> str | None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid: a message, or None when valid."""
    if not group_id:
        return "GroupId can't be empty."
    if instance_id == "":
        return "InstanceId can't be empty."
    if rack_id == "":
        return "RackId can't be empty."
    if api_version >= 1 and not member_id:
        return "MemberId can't be empty."
    if member_epoch > 0 or member_epoch == -1:
        if not member_id:
            return "MemberId can't be empty."
    elif member_epoch == 0:
        if rebalance_timeout_ms is None or rebalance_timeout_ms == -1:
            return "RebalanceTimeoutMs must be provided in first request."
        if owned is None or any(owned.values()):
            return "TopicPartitions must be empty when (re-)joining."
        # an empty list of names or an empty regex is a member subscribed to nothing, as in Kafka
        if subscribed_topic_names is None and subscribed_topic_regex is None:
            return "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
    elif member_epoch == -2:
        if not member_id:
            return "MemberId can't be empty."
        if instance_id is None:
            return "InstanceId can't be null."
    else:
        return "MemberEpoch is invalid."
    return None

