"""The states of groups and members, as enums with Kafka's names and values.

Group states are answered on the wire by name (DescribeGroups, ListGroups,
ConsumerGroupDescribe), so they are string enums whose values are Kafka's names; a member's
state is persisted in `__consumer_offsets` as a number, so it is an int enum with Kafka's
values. (Transaction states, persisted as numbers too, are broker.transactions.state.TxnState.)
`GroupError` is the refusal every group state machine raises: a Kafka error code and message."""

from __future__ import annotations

import enum

from kio.schema.errors import ErrorCode


class ClassicGroupState(enum.StrEnum):
    """Kafka's ClassicGroupState."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class ConsumerGroupState(enum.StrEnum):
    """Kafka's ConsumerGroup.ConsumerGroupState (KIP-848 groups)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(enum.IntEnum):
    """Kafka's MemberState of a KIP-848 member (ConsumerGroupCurrentMemberAssignmentValue.State)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def of(cls, value: int) -> "MemberState":
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class GroupError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code = code
