"""How Java prints the collections Kafka puts in its error messages, so that ours read the same.

A java.util.HashMap or HashSet iterates by bucket: the key's String.hashCode, spread (h ^ h >>> 16)
and masked by the table size (16 until more than 12 entries), then in insertion order within a
bucket."""

from __future__ import annotations

from typing import Iterable


def java_string_hash(s: str) -> int:
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h


def hash_order(keys: Iterable[str]) -> list[str]:
    """`keys` in the order a Java HashMap/HashSet holding them iterates."""
    items = list(dict.fromkeys(keys))
    table = 16
    while len(items) > table * 3 // 4:
        table *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key)
        return (h ^ (h >> 16)) & (table - 1)
    return sorted(items, key=bucket)


def set_text(keys: Iterable[str]) -> str:
    """AbstractCollection.toString of a HashSet of strings: [a, b]."""
    return "[" + ", ".join(hash_order(keys)) + "]"
