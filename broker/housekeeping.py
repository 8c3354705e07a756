"""Housekeeping: retention, compaction and the fsync=interval flush, off the request path.

Rules:
- Retention is due by the broker's clock (broker.clock), and a jump of that clock wakes the loop,
  so an advance past log.retention.check.interval.ms applies retention at once, at the advanced
  time.
- What to do is decided on the trio loop (the floors come from transaction state, which only the
  loop may read); the work runs in a worker thread (storage allows retention and compaction
  beside appends and reads).
"""

from __future__ import annotations

import logging
from typing import Iterable

import trio

from .clock import CLOCK, JumpTimer, now_ms
from .partition import Partition
from .state import Broker

log = logging.getLogger("kafkalite.server")


async def housekeeping(broker: Broker) -> None:
    """Retention, compaction and the fsync=interval flush, off the request path. Retention is due
    by the broker's clock and a jump of it wakes this loop, so an advance past
    log.retention.check.interval.ms applies retention at once, at the advanced time."""
    config = broker.config
    flush_every = config["log.flush.interval.ms"] / 1000
    retention_every_ms = config["log.retention.check.interval.ms"]
    next_retention = now_ms() + retention_every_ms
    with JumpTimer(CLOCK) as timer:
        while True:
            await timer.sleep(flush_every)
            if config["fsync"] == "interval":
                parts = list(broker.cluster.all_partitions())
                if parts:
                    await trio.to_thread.run_sync(_flush_all, parts)
            if now_ms() >= next_retention:
                next_retention = now_ms() + retention_every_ms
                jobs = retention_jobs(broker)
                if jobs:
                    await trio.to_thread.run_sync(run_retention_jobs, jobs)


def _flush_all(parts: Iterable[Partition]) -> None:
    for p in parts:
        try:
            p.flush()
        except (OSError, ValueError):
            pass  # a partition deleted meanwhile


def retention_jobs(broker: Broker) -> list[tuple[Partition, int]]:
    """What retention and compaction must do, decided on the trio loop (the floors come from
    transaction state, which only the loop may read)."""
    jobs = []
    for part in broker.cluster.all_partitions():
        jobs.append((part, part.plan_retention()))
    return jobs


def run_retention_jobs(jobs: list[tuple[Partition, int]]) -> None:
    """Runs in a worker thread: storage allows retention and compaction beside appends and reads."""
    now = now_ms()
    for part, last_stable_offset in jobs:
        try:
            part.apply_retention(now, last_stable_offset)
        except Exception:
            log.exception("retention failed on %s-%d", part.topic.name, part.index)
