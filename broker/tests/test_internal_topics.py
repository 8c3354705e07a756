"""The partition of an internal topic that holds a group id or a transactional id: Kafka's
`Utils.abs(key.hashCode()) % partitions`, the same rule for both coordinators."""

from __future__ import annotations

from kafkalite.broker.internal_topics import INT32_MIN, java_string_hash, kafka_abs, partition_for


def _hash_by_powers(s: str) -> int:
    """String.hashCode as its definition states it, s[0]*31^(n-1) + ... + s[n-1], over UTF-16
    code units, wrapped to a signed int: an independent check of the loop in the product."""
    units = s.encode("utf-16-be")
    codes = [int.from_bytes(units[i:i + 2], "big") for i in range(0, len(units), 2)]
    n = len(codes)
    h = sum(c * 31 ** (n - 1 - i) for i, c in enumerate(codes)) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


def test_java_string_hash_matches_java():
    assert java_string_hash("") == 0
    assert java_string_hash("txn") == 115306           # "txn".hashCode() in Java
    assert java_string_hash("hello world") == 1794106052
    for s in ("group-1", "ümlaut", "emoji \U0001F600 id", "a" * 100):
        assert java_string_hash(s) == _hash_by_powers(s)


def test_min_value_hash_goes_to_partition_zero():
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs maps it to 0, where
    # Python's abs would give 2**31 and, with 50 partitions, partition 48
    key = "polygenelubricants"
    assert java_string_hash(key) == _hash_by_powers(key) == INT32_MIN
    assert kafka_abs(INT32_MIN) == 0 and abs(INT32_MIN) % 50 == 48
    assert partition_for(key, 50) == 0
    assert partition_for(key, 1) == 0


def test_negative_hashes_use_their_absolute_value():
    key = next(k for k in (f"consumer-group-{i}" for i in range(1000)) if java_string_hash(k) < 0)
    assert partition_for(key, 7) == abs(java_string_hash(key)) % 7
    assert partition_for("txn", 50) == 115306 % 50
