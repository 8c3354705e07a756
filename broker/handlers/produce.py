"""Produce (key 0), v3-v13 (advertised from v0 as Kafka 4.x does; v0-v2 are refused).

Each partition's payload must be exactly one magic-v2 batch with a valid CRC that is not a
control batch (CORRUPT_MESSAGE / INVALID_RECORD otherwise), no larger than the topic's
max.message.bytes (MESSAGE_TOO_LARGE). CreateTime timestamps must lie within the topic's
message.timestamp.before/after.max.ms of now (INVALID_TIMESTAMP), and every record of a
compacted topic needs a key (INVALID_RECORD). Clients may not write to internal topics.
Idempotent batches follow Kafka's sequence rules (broker.producers): a duplicate of one of
the producer's last five batches is acknowledged with its original base offset and not
appended again. Transactional batches are checked by the transaction coordinator when one
is running. The batch is appended as the bytes that arrived (offsets patched in place);
acks=0 gets no response, and an error on acks=0 closes the connection as in Kafka. With
fsync=always the data is fsynced before the response. A failed log write or fsync (a full
disk, an I/O error) is KAFKA_STORAGE_ERROR for that partition; writes succeed again once the
disk does (Kafka instead takes the log directory offline until a restart).
"""

from __future__ import annotations

import logging
import uuid

import trio
from kio.schema.errors import ErrorCode

from protocol.messages import make
from protocol.records import BatchHeader, InvalidRecord, decode_records, validate_produce_batches

from ..cluster import now_ms
from ..producers import ProduceError
from . import api
from .common import CloseConnection, response_module

log = logging.getLogger("kafkalite.produce")


class PartitionResult:
    __slots__ = ("error", "base_offset", "log_append_time", "log_start_offset", "message")

    def __init__(self, error=ErrorCode.none, base_offset=-1, log_append_time=-1, log_start_offset=-1, message=None):
        self.error = error
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset
        self.message = message


def append_to_partition(ctx, part, records, transactional_id) -> PartitionResult:
    """Validate and append one partition's batch. No await: atomic on the trio loop."""
    if part.topic.internal:
        return PartitionResult(ErrorCode.invalid_topic_exception, message=f"cannot write to internal topic {part.topic.name}")
    if not records:
        return PartitionResult(ErrorCode.invalid_record, message="a produce request needs one record batch per partition")
    plog = part.log
    if len(records) > plog.config.max_message_bytes:
        return PartitionResult(ErrorCode.message_too_large,
                               message=f"batch of {len(records)} bytes exceeds max.message.bytes={plog.config.max_message_bytes}")
    try:
        validate_produce_batches(records)
    except InvalidRecord as exc:
        return PartitionResult(getattr(ErrorCode, exc.error_code_name.lower()), message=exc.message)
    h = BatchHeader(records, 0)
    if h.total_size != len(records):
        return PartitionResult(ErrorCode.invalid_record,
                               message="produce requests may carry exactly one record batch per partition")
    refused = check_topic_policy(part, records, h)
    if refused is not None:
        return refused
    txn = ctx.broker.services.get("transactions")
    if h.is_transactional:
        if txn is None:
            return PartitionResult(ErrorCode.invalid_txn_state, message="transactions are not enabled")
        err = txn.check_produce(ctx, transactional_id, part, h)
        if err is not None:
            return PartitionResult(err[0], message=err[1])
    elif transactional_id is not None:
        return PartitionResult(ErrorCode.invalid_record, message="a transactional request must carry transactional batches")
    states = part.producers
    pid = h.producer_id
    if pid >= 0:
        try:
            dup = states.check(pid, h.producer_epoch, h.base_sequence, h.last_sequence)
        except ProduceError as exc:
            return PartitionResult(exc.code, message=exc.message)
        if dup is not None:
            return PartitionResult(base_offset=dup.first_offset, log_start_offset=plog.log_start_offset)
        entry = states.entries.get(pid)
        if (not h.is_transactional and entry is not None and entry.current_txn_first_offset is not None):
            return PartitionResult(ErrorCode.invalid_txn_state,
                                   message=f"producer {pid} has an open transaction on this partition")
    try:
        info = plog.append(bytearray(records), leader_epoch=part.leader_epoch, now_ms=now_ms())
    except OSError as exc:
        # a full disk or an I/O error: the log took nothing (append truncates a partial
        # write), so the producer may retry; Kafka answers a failed log write this way
        log.warning("append to %s-%d failed: %s", part.topic.name, part.index, exc)
        return PartitionResult(ErrorCode.kafka_storage_error, message=f"log write failed: {exc.strerror or exc}")
    if pid >= 0:
        entry = states.record_batch(pid, h.producer_epoch, h.base_sequence, h.last_sequence,
                                    info.base_offset, info.last_offset, info.max_timestamp)
        if h.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = info.base_offset
            if txn is not None:
                txn.on_transactional_append(part, entry)
    # read_uncommitted fetches see the new data at once; read_committed ones when the LSO moves
    part.wake()
    return PartitionResult(base_offset=info.base_offset, log_append_time=info.log_append_time_ms,
                           log_start_offset=info.log_start_offset)


def check_topic_policy(part, records, h) -> PartitionResult | None:
    """The topic-config checks of Kafka's LogValidator: CreateTime within
    message.timestamp.before/after.max.ms of now (KIP-937), and a key on every record of a
    compacted topic (the only check here that looks inside the batch, so only compacted
    topics pay for it)."""
    policy = part.topic.policy
    if not policy.log_append_time:
        now = now_ms()
        if h.max_timestamp >= 0 and h.max_timestamp > now + policy.timestamp_after_max_ms:
            return PartitionResult(ErrorCode.invalid_timestamp, message=(
                f"timestamp {h.max_timestamp} is more than message.timestamp.after.max.ms="
                f"{policy.timestamp_after_max_ms} ahead of the broker's time {now}"))
        if 0 <= h.base_timestamp < now - policy.timestamp_before_max_ms:
            return PartitionResult(ErrorCode.invalid_timestamp, message=(
                f"timestamp {h.base_timestamp} is more than message.timestamp.before.max.ms="
                f"{policy.timestamp_before_max_ms} behind the broker's time {now}"))
    if policy.compacted:
        try:
            keyless = any(r.key is None for r in decode_records(records))
        except Exception as exc:  # a codec we cannot read: Kafka would fail decompression too
            return PartitionResult(ErrorCode.corrupt_message, message=f"cannot read the batch: {exc}")
        if keyless:
            return PartitionResult(ErrorCode.invalid_record, message=(
                f"Compacted topic cannot accept message without key in topic partition "
                f"{part.topic.name}-{part.index}."))
    return None


@api(0, 3, 13, advertised_min=0)
async def handle(ctx, request):
    cluster = ctx.cluster
    acks = request.acks
    by_id = ctx.api_version >= 13
    results: list[tuple[object, list[tuple[int, PartitionResult]]]] = []
    touched = []
    for tdata in request.topic_data:
        topic = cluster.topics_by_id.get(tdata.topic_id) if by_id else cluster.topics.get(tdata.name)
        presults = []
        for pdata in tdata.partition_data:
            if acks not in (0, 1, -1):
                res = PartitionResult(ErrorCode.invalid_required_acks)
            elif topic is None or not 0 <= pdata.index < len(topic.partitions):
                res = PartitionResult(ErrorCode.unknown_topic_id if by_id and topic is None
                                      else ErrorCode.unknown_topic_or_partition)
            else:
                part = topic.partitions[pdata.index]
                res = append_to_partition(ctx, part, pdata.records, request.transactional_id)
                if res.error == ErrorCode.none:
                    touched.append(part)
            if res.error != ErrorCode.none:
                log.info("produce to %s[%d] from %r: %s %s", getattr(tdata, "name", None) or tdata.topic_id,
                         pdata.index, ctx.client_id, res.error.name, res.message or "")
            presults.append((pdata.index, res))
        results.append((tdata, presults))
    if touched and ctx.broker.config["fsync"] == "always":
        failed = await trio.to_thread.run_sync(_flush, touched)
        for _tdata, prs in results:
            for _idx, r in prs:
                if failed and r.error == ErrorCode.none:
                    # not durable: the client must not take it as acknowledged
                    r.error, r.message = ErrorCode.kafka_storage_error, f"fsync failed: {failed}"
    if acks == 0:
        if any(r.error != ErrorCode.none for _t, prs in results for _i, r in prs):
            raise CloseConnection("error on an acks=0 produce")
        return None
    mod = response_module(ctx)
    return make(
        mod.ProduceResponse,
        responses=tuple(
            make(mod.TopicProduceResponse, name=getattr(tdata, "name", None), topic_id=getattr(tdata, "topic_id", None),
                 partition_responses=tuple(
                     make(mod.PartitionProduceResponse, index=idx, error_code=r.error, base_offset=r.base_offset,
                          log_append_time=r.log_append_time, log_start_offset=r.log_start_offset,
                          record_errors=(), error_message=r.message)
                     for idx, r in prs))
            for tdata, prs in results),
        throttle_time=0,
    )


def _flush(parts) -> str | None:
    """fsync the touched partitions; the first failure's text, or None."""
    failed = None
    for p in {id(p): p for p in parts}.values():
        try:
            p.log.flush()
        except OSError as exc:
            log.warning("fsync of %s-%d failed: %s", p.topic.name, p.index, exc)
            failed = failed or (exc.strerror or str(exc))
    return failed
