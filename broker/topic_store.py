"""The topics store: `<data dir>/__cluster_metadata/topics.json`, what survives a restart of
the cluster's topics.

Rules:
- One entry per topic: name, stable topic id, partition count, config overrides and replica
  lists. Leaders, ISR and epochs are not stored (broker.cluster keeps them in memory).
- The file is rewritten whole and atomically on every change (temporary file, fsync, rename), so
  a crash leaves the old or the new contents, never a mix; one topic a line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from kafkalite.storage.files import write_atomic

FILE_NAME = "topics.json"


class StoredTopic(TypedDict, total=False):
    name: str
    id: str                      # the topic id as a UUID string
    partitions: int
    configs: dict[str, str]
    replicas: list[list[int]]    # absent in files of older kafkalite versions


def load_topics(meta_dir: Path) -> list[StoredTopic]:
    """The stored topics, in the order they were saved; none when there is no file yet (the
    metadata directory is made)."""
    meta_dir.mkdir(parents=True, exist_ok=True)
    path = meta_dir / FILE_NAME
    if not path.exists():
        return []
    data: dict[str, Any] = json.loads(path.read_text())
    return list(data["topics"])


def topic_line(topic: StoredTopic) -> str:
    """A topic as its line of the file: json's C encoder (an indent makes it use its Python one,
    4x slower)."""
    return json.dumps(topic)


def save_topics(meta_dir: Path, topics: list[StoredTopic], *, fsync: bool = True) -> None:
    """Replace the stored topics with `topics`, atomically, and durably unless `fsync` is off (the
    restore control replaces the file at once again)."""
    save_topic_lines(meta_dir, [topic_line(t) for t in topics], fsync=fsync)


def save_topic_lines(meta_dir: Path, lines: list[str], *, fsync: bool = True) -> None:
    """`save_topics` of topics already made lines by `topic_line` (every CreateTopics rewrites the
    whole file: its caller keeps the lines of the topics that did not change)."""
    meta_dir.mkdir(parents=True, exist_ok=True)
    text = '{"topics": [\n' + ",\n".join(lines) + "\n]}\n"
    write_atomic(meta_dir / FILE_NAME, text.encode(), fsync=fsync)
