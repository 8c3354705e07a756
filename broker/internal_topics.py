"""The internal topics the coordinators live on, and Kafka's rule that puts a group id or a
transactional id on one of their partitions: `Utils.abs(key.hashCode()) % partitions`, with
Java's String.hashCode over UTF-16 code units and Kafka's Utils.abs, which maps
Integer.MIN_VALUE to 0 (Python's abs would give 2**31, and another partition)."""

from __future__ import annotations

from typing import Iterator

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})

INT32_MIN = -(1 << 31)


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    for unit in _utf16_units(s):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _utf16_units(s: str) -> Iterator[int]:
    for ch in s:
        cp = ord(ch)
        if cp >= 0x10000:
            cp -= 0x10000
            yield 0xD800 + (cp >> 10)
            yield 0xDC00 + (cp & 0x3FF)
        else:
            yield cp


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: the absolute value, except that Integer.MIN_VALUE maps to 0."""
    return 0 if n == INT32_MIN else abs(n)


def partition_for(key: str, num_partitions: int) -> int:
    """The partition of an internal topic that holds `key` (a group id or a transactional id)."""
    return kafka_abs(java_string_hash(key)) % num_partitions
