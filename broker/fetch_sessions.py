"""Incremental fetch sessions (KIP-227): the broker-wide session cache.

A full fetch with session epoch 0 creates a session holding the requested partitions (their
fetch offsets, byte limits and what was last answered: high watermark, log start offset); the
response carries its id and the client's next request must come with epoch 1, 2, ... An
incremental request (session id and epoch > 0) adds or updates the partitions it names,
removes its forgotten topics, and is answered only with the partitions that have something
new: records, a changed high watermark or log start offset, or an error. Epoch -1 closes the
session (a sessionless full fetch); a full fetch naming an old session id closes that one.

The cache holds at most `max.incremental.fetch.session.cache.slots` sessions. When it is full,
a new session evicts the least recently used session unused for
`min.incremental.fetch.session.eviction.ms`, else the smallest session with fewer partitions
than the new one (a tie goes to the older); if nothing can go, the fetch is answered with session id 0 (no session), which
clients handle by sending full fetches. Plain state: the fetch handler feeds it requests and
the time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1


def next_epoch(epoch: int) -> int:
    return 1 if epoch == 2**31 - 1 else epoch + 1


class SessionError(Exception):
    def __init__(self, code: ErrorCode):
        super().__init__(code.name)
        self.code = code


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: the client's last request for it and our last answer."""
    req: Any                         # the kio FetchPartition last sent for it
    high_watermark: int = -1         # -1: not answered yet, or last answer was an error
    log_start_offset: int = -1

    def must_respond(self, error: ErrorCode, records: int, high_watermark: int, log_start_offset: int) -> bool:
        """Kafka's CachedPartition.maybeUpdateResponseData: whether an incremental response must
        include the partition, remembering what it answers."""
        respond = records > 0
        if high_watermark != self.high_watermark:
            respond = True
            self.high_watermark = high_watermark
        if log_start_offset != self.log_start_offset:
            respond = True
            self.log_start_offset = log_start_offset
        if error != ErrorCode.none:
            self.high_watermark = -1  # answer it again once the error is gone
            respond = True
        return respond


@dataclass(slots=True)
class FetchSession:
    id: int
    by_id: bool                      # topics named by id (Fetch v13+) or by name
    epoch: int                       # the epoch the next request must carry
    last_used_ms: int
    # (topic id or name, partition) -> CachedPartition, in the order they are fetched
    partitions: dict[tuple[Any, int], CachedPartition] = field(default_factory=dict)

    def update(self, added: list[tuple[tuple[Any, int], Any]], forgotten: list[tuple[Any, int]]) -> None:
        for key, req in added:
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(req)
            else:
                cached.req = req
        for key in forgotten:
            self.partitions.pop(key, None)

    def rotate(self, answered: list[tuple[Any, int]]) -> None:
        """Answered partitions go to the end, so that one partition cannot take every response's
        byte budget (Kafka's round robin over the session)."""
        for key in answered:
            cached = self.partitions.pop(key, None)
            if cached is not None:
                self.partitions[key] = cached


class FetchSessionCache:
    def __init__(self, max_slots: int = 1000, eviction_ms: int = 120_000, rng: random.Random | None = None):
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self._rng = rng or random.Random()

    def remove(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)

    def get(self, session_id: int, epoch: int, by_id: bool, now_ms: int) -> FetchSession:
        """The session an incremental request continues, its epoch checked and advanced."""
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionError(ErrorCode.fetch_session_id_not_found)
        if session.epoch != epoch:
            raise SessionError(ErrorCode.invalid_fetch_session_epoch)
        if session.by_id != by_id:
            raise SessionError(ErrorCode.fetch_session_topic_id_error)
        session.epoch = next_epoch(session.epoch)
        session.last_used_ms = now_ms
        return session

    def create(self, by_id: bool, partitions: list[tuple[tuple[Any, int], Any]], now_ms: int) -> FetchSession | None:
        """A new session for a full fetch, or None when the cache has no room for it."""
        if self.max_slots <= 0:
            return None
        if len(self.sessions) >= self.max_slots and not self._evict_one(len(partitions), now_ms):
            return None
        session_id = self._new_id()
        session = FetchSession(session_id, by_id, next_epoch(INITIAL_EPOCH), now_ms)
        session.update(partitions, [])
        self.sessions[session_id] = session
        return session

    def _evict_one(self, size: int, now_ms: int) -> bool:
        stale = [s for s in self.sessions.values() if now_ms - s.last_used_ms >= self.eviction_ms]
        if stale:
            victim = min(stale, key=lambda s: s.last_used_ms)
        else:
            smaller = [s for s in self.sessions.values() if len(s.partitions) < size]
            if not smaller:
                return False
            victim = min(smaller, key=lambda s: (len(s.partitions), s.last_used_ms))
        del self.sessions[victim.id]
        return True

    def _new_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, 2**31 - 1)
            if session_id not in self.sessions:
                return session_id
