"""Fetch (key 1), v4-v18.

Whole batches, read from the segment files as stored: a fetch offset inside a batch returns
that whole batch, and the first partition with data returns at least one whole batch even
when it is larger than the byte limits (KIP-74). read_uncommitted reads up to the high
watermark with a null aborted-transaction list; read_committed reads up to the last stable
offset and lists the aborted transactions in range. v13+ names topics by id (UNKNOWN_TOPIC_ID
for an id we do not know). A fetch with less than min_bytes available waits up to max_wait for
an append (or LSO move) on any of its partitions; waiting never blocks other connections.
Incremental fetch sessions (KIP-227, v7+; broker.fetch_sessions): a full fetch with epoch 0
opens a session and answers its id; an incremental fetch (session id, epoch > 0) updates the
session's partitions, drops its forgotten topics, reads every partition of the session and
answers only those with records, a new high watermark or log start offset, or an error. An
unknown session id gets FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH
(top-level errors, session id 0, no partitions); epoch -1 closes the session; a full cache
answers session id 0 and the client keeps sending full fetches.
A partition of which this node is not a replica is NOT_LEADER_OR_FOLLOWER, and so is one it
follows for v4-v10 (from v11 a follower serves the fetch, as Kafka's do since KIP-392); a
current_leader_epoch other than the partition's is FENCED_LEADER_EPOCH (older) or
UNKNOWN_LEADER_EPOCH (newer); v16+
answers NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH with the current leader and its
endpoint (KIP-951, broker.handlers.leadership).
Record data is not copied through Python: each partition's batches are a FileRegion of the
segment file (protocol.regions), encoded into the response by length and sent from the file
by the connection (os.sendfile on a plain socket), which releases the regions afterwards.

With an authorizer: READ on each topic (TOPIC_AUTHORIZATION_FAILED, checked before the topic's
existence; a v13+ unknown topic id stays UNKNOWN_TOPIC_ID).
"""

from __future__ import annotations

from typing import Any

import trio
from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make
from kafkalite.protocol.regions import FileRegion
from kafkalite.storage import OffsetOutOfRange

from ..context import RequestContext
from ..clock import now_ms
from ..partition import Partition
from ..fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, SessionError
from ..authorizer import AclOperation, ResourceType, allowed_names
from . import api
from .common import response_module
from .leadership import current_leader, node_endpoints, partition_error

READ_COMMITTED = 1


class _Slot:
    """One requested partition and what we answer for it."""

    __slots__ = ("topic_key", "index", "part", "req", "error", "records", "aborted")

    def __init__(self, topic_key: Any, index: int, part: Partition | None, req: Any, error: ErrorCode = ErrorCode.none):
        self.topic_key = topic_key
        self.index = index
        self.part = part
        self.req = req
        self.error = error
        # what was read: a file region (sent from the file), or b"" before a read
        self.records: FileRegion | bytes = b""
        self.aborted: Any = None


def _requested(request, by_id: bool) -> list[tuple[tuple, object]]:
    """((topic id or name, partition), FetchPartition) for every partition the request names."""
    return [((t.topic_id if by_id else t.topic, p.partition), p) for t in request.topics for p in t.partitions]


def _forgotten(request, by_id: bool) -> list[tuple]:
    return [(t.topic_id if by_id else t.topic, p)
            for t in getattr(request, "forgotten_topics_data", ()) for p in t.partitions]


def _resolve(ctx: RequestContext, partitions, by_id: bool) -> list[_Slot]:
    cluster = ctx.cluster
    # KIP-392: a consumer's fetch with client metadata (v11+) may read from a follower
    follower_reads = ctx.api_version >= 11
    slots = []
    readable = None
    if ctx.broker.authorizer is not None:
        # Kafka checks READ on each named topic before looking whether it exists
        if by_id:
            names = {t.name for (key, _i), _p in partitions if (t := cluster.topics_by_id.get(key)) is not None}
        else:
            names = {key for (key, _i), _p in partitions}
        readable = allowed_names(ctx, AclOperation.READ, ResourceType.TOPIC, names)
    for (key, index), p in partitions:
        topic = cluster.topics_by_id.get(key) if by_id else cluster.topics.get(key)
        if readable is not None and (not by_id or topic is not None) and (topic.name if by_id and topic is not None else key) not in readable:
            slots.append(_Slot(key, index, None, p, ErrorCode.topic_authorization_failed))
        elif topic is None:
            err = ErrorCode.unknown_topic_id if by_id else ErrorCode.unknown_topic_or_partition
            slots.append(_Slot(key, index, None, p, err))
        elif not 0 <= index < len(topic.partitions):
            slots.append(_Slot(key, index, None, p, ErrorCode.unknown_topic_or_partition))
        else:
            part = topic.partitions[index]
            err = partition_error(ctx, part, getattr(p, "current_leader_epoch", -1),
                                  follower_reads=follower_reads) or ErrorCode.none
            slots.append(_Slot(key, index, part, p, err))
    return slots


def _read_all(ctx: RequestContext, slots: list[_Slot], max_bytes: int, read_committed: bool) -> int:
    """Fill every slot with what is readable now; returns the number of bytes gathered. The
    file regions read go on ctx.regions, which the connection releases after sending."""
    regions = ctx.regions
    remaining = max_bytes
    total = 0
    for s in slots:
        if s.part is None or s.error not in (ErrorCode.none, ErrorCode.offset_out_of_range):
            continue
        s.error = ErrorCode.none
        if s.records and isinstance(s.records, FileRegion):
            s.records.release()     # an earlier read of this wait
            s.records = b""
        part = s.part
        upper = part.last_stable_offset if read_committed else part.high_watermark
        limit = min(s.req.partition_max_bytes, remaining)
        try:
            data = part.read_region(s.req.fetch_offset, max(limit, 0), upper_bound=upper, min_one=total == 0)
        except OffsetOutOfRange:
            s.error = ErrorCode.offset_out_of_range
            s.records = b""
            continue
        s.records = data
        n = len(data)
        if n and isinstance(data, FileRegion):  # read_region answers b"" only when there is nothing
            regions.append(data)
        total += n
        remaining -= n
        if read_committed:
            s.aborted = part.aborted_txns(s.req.fetch_offset, upper) if n else []
    return total


@api(1, 4, 18)
async def handle(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    version = ctx.api_version
    by_id = version >= 13
    session_id = getattr(request, "session_id", INVALID_SESSION_ID)
    epoch = getattr(request, "session_epoch", FINAL_EPOCH)  # v4-v6 have no sessions
    sessions = ctx.broker.fetch_sessions
    session = None
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        # a full fetch; naming a session closes it
        if session_id != INVALID_SESSION_ID:
            sessions.remove(session_id)
        slots = _resolve(ctx, _requested(request, by_id), by_id)
    else:
        try:
            session = sessions.get(session_id, epoch, by_id, now_ms())
        except SessionError as exc:
            return make(mod.FetchResponse, throttle_time=0, error_code=exc.code, session_id=INVALID_SESSION_ID,
                        responses=())
        session.update(_requested(request, by_id), _forgotten(request, by_id))
        slots = _resolve(ctx, [(key, c.req) for key, c in session.partitions.items()], by_id)
    read_committed = request.isolation_level == READ_COMMITTED
    max_bytes = getattr(request, "max_bytes", 2**31 - 1)
    max_wait_s = request.max_wait.total_seconds()
    deadline = trio.current_time() + max_wait_s
    while True:
        gathered = _read_all(ctx, slots, max_bytes, read_committed)
        errors = any(s.error != ErrorCode.none for s in slots)
        if gathered >= request.min_bytes or errors or not slots or trio.current_time() >= deadline:
            break
        woken = trio.Event()
        for s in slots:
            if s.part is not None:
                s.part.add_waiter(woken)
        with trio.move_on_at(deadline):
            await woken.wait()
        for s in slots:
            if s.part is not None:
                s.part.remove_waiter(woken)
        if not woken.is_set():
            gathered = _read_all(ctx, slots, max_bytes, read_committed)
            break
    answered_id = INVALID_SESSION_ID
    if session is not None:
        slots = [s for s in slots if session.partitions[(s.topic_key, s.index)].must_respond(
            s.error, len(s.records), *_offsets(s.part, s.error)[::2])]
        session.rotate([(s.topic_key, s.index) for s in slots])
        answered_id = session.id
    elif epoch == INITIAL_EPOCH and version >= 7:
        created = sessions.create(by_id, [((s.topic_key, s.index), s.req) for s in slots], now_ms())
        if created is not None:
            answered_id = created.id
            for s in slots:
                created.partitions[(s.topic_key, s.index)].must_respond(
                    s.error, len(s.records), *_offsets(s.part, s.error)[::2])
    return _response(ctx, mod, slots, read_committed, by_id, answered_id)


def _offsets(part, error) -> tuple[int, int, int]:
    """(high watermark, last stable offset, log start offset) as answered; -1 for a partition
    in error, as Kafka answers."""
    if part is None or error not in (ErrorCode.none,):
        return -1, -1, -1
    return part.high_watermark, part.last_stable_offset, part.log_start_offset


_LEADER_HINTED = (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch)


def _response(ctx: RequestContext, mod, slots, read_committed, by_id, session_id=INVALID_SESSION_ID):
    topics: dict = {}
    endpoints: dict = {}
    for s in slots:
        hwm, lso, log_start_offset = _offsets(s.part, s.error)
        aborted = None
        if s.part is None:
            aborted = ()  # Kafka answers an unknown topic or partition with an empty list, not null
        elif s.error != ErrorCode.none:
            aborted = None
        elif read_committed and s.aborted is not None:
            aborted = tuple(make(mod.AbortedTransaction, producer_id=a.producer_id, first_offset=a.first_offset)
                            for a in s.aborted)
        elif read_committed:
            aborted = ()
        fields = dict(partition_index=s.index, error_code=s.error, high_watermark=hwm, last_stable_offset=lso,
                      log_start_offset=log_start_offset, aborted_transactions=aborted, preferred_read_replica=-1,
                      records=s.records)
        if s.error in _LEADER_HINTED and s.part is not None and ctx.api_version >= 16:  # KIP-951
            fields["current_leader"] = current_leader(ctx, mod, s.part, endpoints)
        pd = make(mod.PartitionData, **fields)
        topics.setdefault(s.topic_key, []).append(pd)
    responses = tuple(
        make(mod.FetchableTopicResponse, topic=None if by_id else key, topic_id=key if by_id else None,
             partitions=tuple(parts))
        for key, parts in topics.items())
    return make(mod.FetchResponse, throttle_time=0, error_code=ErrorCode.none, session_id=session_id,
                responses=responses, node_endpoints=node_endpoints(endpoints))
