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
A partition this node does not lead is NOT_LEADER_OR_FOLLOWER, answered from v10 with the
current leader and its endpoint (KIP-951, broker.handlers.leadership); acks=all on a partition
whose ISR is smaller than min.insync.replicas is NOT_ENOUGH_REPLICAS, before the batch is looked at.
Those rules, up to the batch to append, are broker.produce_validation's (validate_produce, asked
once per partition); the producer-state rules are Partition.append's.
The answer to a request whose every batch was taken is encoded here (encode_accepted, the
same bytes kio writes); any other answer is built and encoded through kio. A partition's
error_message (v8+) is null but with the records it names (record_errors: timestamps, keys),
as Kafka sends one only for its RecordValidationException; the broker log has every refusal's.

With an authorizer (broker.authorizer): transactional batches need WRITE on the transactional
id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), then each topic WRITE
(TOPIC_AUTHORIZATION_FAILED, checked before the topic's existence).
"""

from __future__ import annotations

import logging
import struct
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.error_responses import error_response
from kafkalite.protocol.messages import EncodedBody, make, uvarint
from kafkalite.protocol.batch import BATCH_HEADER_SIZE, COMPRESSION_ZSTD, BatchHeader

from ..context import RequestContext
from ..authorizer import AclOperation, ResourceType, allowed, allowed_names
from ..clock import now_ms
from ..partition import Partition, flush_appended
from ..produce_validation import Refused, validate_produce
from ..producers import ProduceError
from . import api
from .common import CloseConnection, response_module
from .leadership import current_leader, node_endpoints, partition_error

log = logging.getLogger("kafkalite.produce")


class PartitionResult:
    __slots__ = ("error", "base_offset", "log_append_time", "log_start_offset", "message", "record_errors", "part")

    def __init__(self, error=ErrorCode.none, base_offset=-1, log_append_time=-1, log_start_offset=-1, message=None,
                 record_errors=()):
        self.error = error
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset
        self.message = message
        self.record_errors = record_errors  # ((batch index, message), ...)
        self.part = None  # set with NOT_LEADER_OR_FOLLOWER: the partition whose leader the answer names


def append_to_partition(ctx: RequestContext, part: Partition, records: bytes | bytearray | None,
                        transactional_id: str | None, acks: int = 1) -> PartitionResult:
    """Validate (broker.produce_validation) and append one partition's batch. No await: atomic
    on the trio loop."""
    not_leader = partition_error(ctx, part)
    checked = validate_produce(part, records, acks, None if not_leader is None else Refused(
        not_leader, f"node {ctx.node_id} does not lead {part.topic.name}-{part.index}"))
    if isinstance(checked, Refused):
        res = PartitionResult(checked.error, message=checked.message, record_errors=checked.record_errors,
                              log_start_offset=part.log_start_offset if checked.with_log_start_offset else -1)
        if not_leader is not None and checked.error == not_leader:
            res.part = part
        return res
    records, h, is_transactional = checked
    if is_transactional:
        err = ctx.broker.services.transactions.check_produce(ctx, transactional_id, part, h)
        if err is not None:
            return PartitionResult(err[0], message=err[1])
    elif transactional_id is not None:
        return PartitionResult(ErrorCode.invalid_record, message="a transactional request must carry transactional batches")
    try:
        done = part.append(records, now_ms=now_ms(), header=h)
    except ProduceError as exc:
        # Kafka answers the log start offset with errors raised while validating against the log
        return PartitionResult(exc.code, message=exc.message, log_start_offset=part.log_start_offset)
    except OSError as exc:
        # a full disk or an I/O error: the log took nothing (its append truncates a partial
        # write) and the producer state is unchanged, so the producer may retry; Kafka answers
        # a failed log write this way
        log.warning("append to %s-%d failed: %s", part.topic.name, part.index, exc)
        return PartitionResult(ErrorCode.kafka_storage_error, message=f"log write failed: {exc.strerror or exc}")
    return PartitionResult(base_offset=done.base_offset, log_append_time=done.log_append_time_ms,
                           log_start_offset=done.log_start_offset)


@api(0, 3, 13, advertised_min=0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    cluster = ctx.cluster
    acks = request.acks
    by_id = ctx.api_version >= 13
    results: list[tuple[object, list[tuple[int, PartitionResult]]]] = []
    touched = []
    writable = None
    if ctx.broker.authorizer is not None:
        if _has_transactional_batches(request) and (
                request.transactional_id is None
                or not allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)):
            return _refused(ctx, request, ErrorCode.transactional_id_authorization_failed)
        writable = allowed_names(ctx, AclOperation.WRITE, ResourceType.TOPIC, (
            _topic_name(cluster, t, by_id) for t in request.topic_data))
    for tdata in request.topic_data:
        topic = cluster.topics_by_id.get(tdata.topic_id) if by_id else cluster.topics.get(tdata.name)
        # an unknown topic id stays UNKNOWN_TOPIC_ID
        denied = writable is not None and (topic is not None or not by_id) \
            and (topic.name if by_id and topic is not None else tdata.name) not in writable
        presults = []
        for pdata in tdata.partition_data:
            if acks not in (0, 1, -1):
                res = PartitionResult(ErrorCode.invalid_required_acks)
            elif denied:
                res = PartitionResult(ErrorCode.topic_authorization_failed)
            elif topic is None or not 0 <= pdata.index < len(topic.partitions):
                res = PartitionResult(ErrorCode.unknown_topic_id if by_id and topic is None
                                      else ErrorCode.unknown_topic_or_partition)
            elif ctx.api_version < 7 and _codec(pdata.records) == COMPRESSION_ZSTD:
                # zstd came with Produce v7 (KIP-110); Kafka refuses it in older requests
                res = PartitionResult(ErrorCode.unsupported_compression_type,
                                      message="Produce requests with version < 7 cannot use zstd compression")
            else:
                part = topic.partitions[pdata.index]
                res = append_to_partition(ctx, part, pdata.records, request.transactional_id, acks)
                if res.error == ErrorCode.none:
                    touched.append(part)
            if res.error != ErrorCode.none:
                log.info("produce to %s[%d] from %r: %s %s", getattr(tdata, "name", None) or tdata.topic_id,
                         pdata.index, ctx.client_id, res.error.name, res.message or "")
            presults.append((pdata.index, res))
        results.append((tdata, presults))
    failed = await flush_appended(touched)
    if failed:
        for _tdata, prs in results:
            for _idx, r in prs:
                if r.error == ErrorCode.none:
                    # not durable: the client must not take it as acknowledged
                    r.error, r.message = ErrorCode.kafka_storage_error, f"fsync failed: {failed}"
    if acks == 0:
        if any(r.error != ErrorCode.none for _t, prs in results for _i, r in prs):
            raise CloseConnection("error on an acks=0 produce")
        return None
    return _response(ctx, results)


def _response(ctx: RequestContext, results: list[tuple[object, list[tuple[int, PartitionResult]]]]):
    if all(r.error == ErrorCode.none and r.message is None and not r.record_errors and r.part is None
           for _tdata, prs in results for _idx, r in prs):
        return encode_accepted(ctx.api_version, results)
    mod = response_module(ctx)
    endpoints: dict = {}
    return make(
        mod.ProduceResponse,
        responses=tuple(
            make(mod.TopicProduceResponse, name=getattr(tdata, "name", None), topic_id=getattr(tdata, "topic_id", None),
                 partition_responses=tuple(_partition_response(ctx, mod, idx, r, endpoints) for idx, r in prs))
            for tdata, prs in results),
        throttle_time=0,
        node_endpoints=node_endpoints(endpoints),
    )


# a partition's answer when its batch was taken: index, error_code 0, base_offset,
# log_append_time, [log_start_offset (v5+)], [record_errors empty, error_message null (v8+)],
# [no tagged fields (v9+, flexible: compact array and string lengths are varints + 1)]
_ACCEPTED_V3 = struct.Struct(">ihqq")
_ACCEPTED_V5 = struct.Struct(">ihqqq")
_ACCEPTED_V8 = struct.Struct(">ihqqqih")
_ACCEPTED_FLEX = struct.Struct(">ihqqqBBB")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def encode_accepted(version: int, results: list[tuple[Any, list[tuple[int, PartitionResult]]]]) -> EncodedBody:
    """The ProduceResponse body when every partition's batch was taken, encoded here: byte for
    byte what kio writes for it (broker/tests/test_produce_response_encoding.py compares them
    for every version), at a fraction of the cost of building and walking the entities, which
    was the largest Python cost of a many-partition produce request. Answers carrying errors
    (messages, record errors, KIP-951 leaders) go through kio."""
    flexible = version >= 9
    out = bytearray(uvarint(len(results) + 1) if flexible else _I32.pack(len(results)))
    for tdata, prs in results:
        if version >= 13:
            out += tdata.topic_id.bytes
        else:
            name = tdata.name.encode()
            out += uvarint(len(name) + 1) if flexible else _I16.pack(len(name))
            out += name
        out += uvarint(len(prs) + 1) if flexible else _I32.pack(len(prs))
        for idx, r in prs:
            if flexible:
                out += _ACCEPTED_FLEX.pack(idx, 0, r.base_offset, r.log_append_time, r.log_start_offset, 1, 0, 0)
            elif version >= 8:
                out += _ACCEPTED_V8.pack(idx, 0, r.base_offset, r.log_append_time, r.log_start_offset, 0, -1)
            elif version >= 5:
                out += _ACCEPTED_V5.pack(idx, 0, r.base_offset, r.log_append_time, r.log_start_offset)
            else:
                out += _ACCEPTED_V3.pack(idx, 0, r.base_offset, r.log_append_time)
        if flexible:
            out.append(0)   # the topic's tagged fields
    out += _I32.pack(0)     # throttle_time_ms
    if flexible:
        out.append(0)       # no tagged fields (node_endpoints only comes with a leader hint)
    return EncodedBody(out)


def encoded_with_throttle_time(body: EncodedBody, version: int, throttle_ms: int) -> EncodedBody:
    """An encode_accepted body with its throttle_time_ms set (broker.throttling): the field is the
    body's last but for the flexible versions' empty tagged fields."""
    end = len(body) - (1 if version >= 9 else 0)
    return EncodedBody(body[:end - 4] + _I32.pack(throttle_ms) + body[end:])


def _partition_response(ctx: RequestContext, mod, idx: int, r: PartitionResult, endpoints: dict):
    # Kafka answers an error message only with the records it names (its RecordValidationException:
    # timestamps, keys of compacted topics); every other refusal's message is null on the wire
    # and goes to the log here
    fields = dict(index=idx, error_code=r.error, base_offset=r.base_offset, log_append_time=r.log_append_time,
                  log_start_offset=r.log_start_offset, record_errors=_record_errors(mod, r),
                  error_message=r.message if r.record_errors else None)
    if r.part is not None and hasattr(mod, "LeaderIdAndEpoch"):  # KIP-951, v10+
        fields["current_leader"] = current_leader(ctx, mod, r.part, endpoints)
    return make(mod.PartitionProduceResponse, **fields)


def _topic_name(cluster, tdata, by_id: bool) -> str:
    """The name authorisation is checked against; an unknown topic id checks an empty name."""
    if not by_id:
        return tdata.name
    topic = cluster.topics_by_id.get(tdata.topic_id)
    return topic.name if topic is not None else ""


def _has_transactional_batches(request) -> bool:
    for tdata in request.topic_data:
        for pdata in tdata.partition_data:
            records = pdata.records
            if records is not None and len(records) >= BATCH_HEADER_SIZE and BatchHeader(records, 0).is_transactional:
                return True
    return False


def _refused(ctx: RequestContext, request, code):
    """Kafka's whole-request error (its getErrorResponse): every partition answers `code`."""
    if request.acks == 0:
        raise CloseConnection(f"{code.name} on an acks=0 produce")
    return error_response(ctx.header.api_key, ctx.api_version, request, code)


def _record_errors(mod, r: PartitionResult) -> tuple:
    if not r.record_errors or not hasattr(mod, "BatchIndexAndErrorMessage"):  # the list came with v8
        return ()
    return tuple(make(mod.BatchIndexAndErrorMessage, batch_index=i, batch_index_error_message=m)
                 for i, m in r.record_errors)


def _codec(records) -> int | None:
    if records is None or len(records) < BATCH_HEADER_SIZE:
        return None
    return BatchHeader(records, 0).compression

