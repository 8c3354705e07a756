"""Differences the differ accepts, each with its reason (docs/DESIGN.md, "Where kafkalite
departs from Kafka on purpose"). Keyed by conversation name; each entry matches the path of a
difference by `fnmatch` pattern. Everything not listed fails the conversation's test."""

from __future__ import annotations

from fnmatch import fnmatchcase

KNOWN: dict[str, list[tuple[str, str]]] = {
}


def accepted(conversation: str, path: str) -> str | None:
    for pattern, reason in KNOWN.get(conversation, []) + KNOWN.get("*", []):
        if fnmatchcase(path, pattern):
            return reason
    return None
