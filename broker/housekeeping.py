"""Housekeeping: retention, the log cleaner (compaction) and the fsync=interval flush, off the
request path.

Rules:
- Retention is due by the broker's clock (broker.clock), and a jump of that clock wakes the loop,
  so an advance past log.retention.check.interval.ms applies retention at once, at the advanced
  time. Retention only deletes segments; it does not compact.
- The log cleaner keeps Kafka's schedule, apart from retention: with log.cleaner.enable (Kafka's
  default, true) it passes over the partitions whose cleanup.policy includes compact every
  log.cleaner.backoff.ms (Kafka's default, 15 s) of the broker's clock, as Kafka's cleaner thread
  backs off between passes, so advance-clock runs it too; a pass cleans a log whose dirty ratio is
  above min.cleanable.dirty.ratio or that max.compaction.lag.ms makes due, up to where
  min.compaction.lag.ms allows (storage.cleanable), both lags at the pass's time on the broker's
  clock. log.cleaner.enable and log.cleaner.backoff.ms are read at every pass, so a dynamic broker
  config changes them at once. With log.cleaner.enable=false nothing is compacted.
- Retention and the cleaner look at open partitions only: one never opened holds nothing new
  since the last stop, and opening it would make a pass cost every partition there is (a loaded
  one is opened by the start's background pass, a created one by its first use).
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
    """Retention and the fsync=interval flush, and the log cleaner beside them."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(retention_and_flush, broker)
        nursery.start_soon(log_cleaner, broker)


async def retention_and_flush(broker: Broker) -> None:
    """The fsync=interval flush, and retention, due by the broker's clock: a jump of it wakes this
    loop, so an advance past log.retention.check.interval.ms applies retention at once, at the
    advanced time."""
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
                parts = retention_jobs(broker)
                if parts:
                    await trio.to_thread.run_sync(run_retention_jobs, parts)


async def log_cleaner(broker: Broker) -> None:
    """Kafka's LogCleaner schedule: a pass over the compacted partitions every
    log.cleaner.backoff.ms of the broker's clock while log.cleaner.enable is on."""
    config = broker.config
    next_pass = now_ms() + config["log.cleaner.backoff.ms"]
    with JumpTimer(CLOCK) as timer:
        while True:
            wait_ms = next_pass - now_ms()
            if wait_ms > 0:
                # woken early by a clock jump, or to read a changed backoff
                await timer.sleep(min(wait_ms, config["log.cleaner.backoff.ms"]) / 1000)
                continue
            next_pass = now_ms() + config["log.cleaner.backoff.ms"]
            if not config["log.cleaner.enable"]:
                continue
            jobs = compaction_jobs(broker)
            if jobs:
                await trio.to_thread.run_sync(run_compaction_jobs, jobs)


def _flush_all(parts: Iterable[Partition]) -> None:
    for p in parts:
        try:
            p.flush()
        except (OSError, ValueError):
            pass  # a partition deleted meanwhile


def retention_jobs(broker: Broker) -> list[Partition]:
    """The partitions retention looks at, their floors set on the trio loop (the floors come from
    transaction state, which only the loop may read)."""
    parts = [part for part in broker.cluster.all_partitions() if part.opened]
    for part in parts:
        part.plan_retention()
    return parts


def run_retention_jobs(parts: list[Partition]) -> None:
    """Runs in a worker thread: storage allows retention beside appends and reads."""
    now = now_ms()
    for part in parts:
        try:
            part.apply_retention(now)
        except Exception:
            log.exception("retention failed on %s-%d", part.topic.name, part.index)


def compaction_jobs(broker: Broker) -> list[tuple[Partition, int]]:
    """The compacted partitions and their last stable offsets, read on the trio loop."""
    return [(part, part.last_stable_offset) for part in broker.cluster.all_partitions()
            if part.opened and part.compact_enabled]


def run_compaction_jobs(jobs: list[tuple[Partition, int]]) -> None:
    """Runs in a worker thread: storage allows compaction beside appends and reads."""
    now = now_ms()
    for part, last_stable_offset in jobs:
        try:
            part.apply_compaction(now, last_stable_offset)
        except Exception:
            log.exception("compaction failed on %s-%d", part.topic.name, part.index)
