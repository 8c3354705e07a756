"""Produce validation: whether one partition of a Produce request may append its batch, and what.

Rules:
- The one owner of the broker's produce rules. `validate_produce(part, records, acks,
  not_leader)` answers for one partition, in Kafka's order: a client may not write to an internal
  topic (ReplicaManager.appendToLocalLog), the leadership answer the caller brings
  (broker.handlers.leadership), min.insync.replicas for acks=all (Partition.appendRecordsToLeader),
  max.message.bytes, the batch itself (`validate_produce_batches`), the topic's timestamp and key
  rules and its compression.type (LogValidator). It returns `Refused` (the partition's answer) or
  `Accepted` (the bytes to append and their header); the Produce handler answers with what it
  gets, and the producer-state and transaction checks stay with `Partition.append` and the
  transaction coordinator.
- `validate_produce_batches` is Kafka's order for the batch: ProduceRequest.validateRecords (a
  batch present, magic 2, exactly one batch), UnifiedLog.analyzeAndValidateRecords (base offset
  0 from clients, size and CRC), LogValidator.validateBatch (offset range vs record count, no
  control batches, a producer id needs a sequence). Its refusal is `InvalidRecord` naming Kafka's
  error code (CORRUPT_MESSAGE or INVALID_RECORD) and Kafka's message.
- The hot path reads headers only: one unpack per batch and one CRC over it, no copy; records
  are decoded only where a topic asks for it (keys of a compacted topic, a compression.type that
  differs from the producer's) or on the INVALID_TIMESTAMP error path.
- The topic configs Produce checks (max.message.bytes, timestamps, keys of compacted topics,
  compression.type, min.insync.replicas) are parsed once per config change into a `ProducePolicy`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Protocol, Union

from kio.schema.errors import ErrorCode

from kafkalite.protocol import batch as _batch
from kafkalite.protocol.batch import (ATTRIBUTES_OFFSET, BATCH_HEADER_SIZE, COMPRESSION_MASK, CONTROL_MASK,
                                      HEADER_STRUCT, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC, MAGIC_OFFSET,
                                      MIN_BATCH_LENGTH, NO_SEQUENCE, NO_TIMESTAMP, TRANSACTIONAL_MASK,
                                      BatchHeader, ReadableBuffer, increment_sequence)
from kafkalite.protocol.records import decode_records, recompress_batch

from .clock import now_ms
from .settings.topic_keys import topic_config_default

_I8 = struct.Struct(">b")
_I32 = struct.Struct(">i")


class InvalidRecord(ValueError):
    """A produced batch Kafka would refuse; `error` is the Kafka error code name
    ('CORRUPT_MESSAGE' or 'INVALID_RECORD')."""

    def __init__(self, error: str, message: str):
        super().__init__(f"{error}: {message}")
        self.error = error
        self.error_code_name = error
        self.message = message



class ProduceBatchesInfo(NamedTuple):
    """What Produce needs to know about one partition's records, from headers only."""
    batch_count: int
    record_count: int
    size_bytes: int            # all batches together
    max_batch_bytes: int       # the largest batch (max.message.bytes applies per batch)
    producer_id: int
    producer_epoch: int
    is_transactional: bool
    base_sequence: int         # of the first batch
    last_sequence: int         # of the last batch (int32 wrap as Kafka)
    first_timestamp: int       # base timestamp of the first batch
    max_timestamp: int         # over all batches
    compression: int           # codec id of the first batch
    last_offset_delta: int     # of the last batch; records span base..base+this when single


def validate_produce_batches(buf: ReadableBuffer, *, single_batch: bool = True,
                             allow_nonzero_base_offset: bool = False) -> ProduceBatchesInfo:
    """Check one partition's records from a Produce request the way Kafka does, headers only.

    Kafka's order: ProduceRequest.validateRecords (a batch present, magic 2, exactly one
    batch), UnifiedLog.analyzeAndValidateRecords (base offset 0 from clients, size and CRC),
    LogValidator.validateBatch (offset range vs record count, no control batches, a producer
    id needs a sequence). Raises InvalidRecord('CORRUPT_MESSAGE' | 'INVALID_RECORD', text).

    `single_batch=False` accepts several batches per partition (Kafka does not); they must
    then share producer id, epoch and transactional flag."""
    n = len(buf)
    if n < LOG_OVERHEAD:
        if n == 0:
            raise InvalidRecord("INVALID_RECORD", "Produce requests must have at least one record batch per partition")
        raise InvalidRecord("CORRUPT_MESSAGE", f"{n} bytes are too few for a record batch")
    unpack = HEADER_STRUCT.unpack_from
    pos = 0
    count = 0
    records = 0
    max_batch = 0
    max_ts = NO_TIMESTAMP
    # the first and the current batch's header fields (HEADER_STRUCT order); the loop runs at least once
    first: tuple[Any, ...] = ()
    f: tuple[Any, ...] = ()
    while pos < n:
        if n - pos < LOG_OVERHEAD:
            raise InvalidRecord("CORRUPT_MESSAGE", f"{n - pos} trailing bytes after the last record batch")
        length = _I32.unpack_from(buf, pos + LENGTH_OFFSET)[0]
        total = length + LOG_OVERHEAD
        if length < MIN_BATCH_LENGTH:
            raise InvalidRecord("CORRUPT_MESSAGE",
                                f"Record batch is corrupt (the size {total} is smaller than the minimum "
                                f"allowed overhead {BATCH_HEADER_SIZE})")
        if pos + total > n:
            raise InvalidRecord("CORRUPT_MESSAGE",
                                f"record batch of {total} bytes at position {pos} runs past the end of the records ({n})")
        magic = _I8.unpack_from(buf, pos + MAGIC_OFFSET)[0]
        if magic != MAGIC:
            raise InvalidRecord("INVALID_RECORD",
                                "Produce requests are only allowed to contain record batches with magic version 2")
        if count == 1 and single_batch:
            raise InvalidRecord("INVALID_RECORD",
                                "Produce requests are only allowed to contain exactly one record batch per partition")
        f = unpack(buf, pos)
        (base_offset, _, _, _, crc, attrs, lod, base_ts, batch_max_ts, pid, epoch, base_seq, rcount) = f
        if base_offset != 0 and not allow_nonzero_base_offset:
            raise InvalidRecord("INVALID_RECORD",
                                f"The baseOffset of the record batch should be 0, but it is {base_offset}")
        if _batch.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET:pos + total]) != crc:
            raise InvalidRecord("CORRUPT_MESSAGE", f"Record is corrupt (stored crc = {crc}) at position {pos}")
        if lod + 1 <= 0:
            raise InvalidRecord("INVALID_RECORD", f"Batch has an invalid offset range: last offset delta {lod}")
        if rcount <= 0:
            raise InvalidRecord("INVALID_RECORD", f"Invalid reported count for record batch: {rcount}")
        if rcount != lod + 1:
            raise InvalidRecord("INVALID_RECORD",
                                f"Inconsistent batch offset range [0, {lod}] and count of records {rcount}")
        if attrs & CONTROL_MASK:
            raise InvalidRecord("INVALID_RECORD", "Clients are not allowed to write control records")
        if pid >= 0 and base_seq < 0:
            raise InvalidRecord("INVALID_RECORD",
                                f"Invalid sequence number {base_seq} in record batch with producerId {pid}")
        if not first:
            first = f
        elif (pid != first[9] or epoch != first[10]
              or (attrs & TRANSACTIONAL_MASK) != (first[5] & TRANSACTIONAL_MASK)):
            raise InvalidRecord("INVALID_RECORD",
                                "all record batches of a partition must share producer id, epoch and transactional flag")
        count += 1
        records += rcount
        if total > max_batch:
            max_batch = total
        if batch_max_ts > max_ts:
            max_ts = batch_max_ts
        pos += total
    last = f
    last_seq = NO_SEQUENCE if last[11] == NO_SEQUENCE else increment_sequence(last[11], last[6])
    return ProduceBatchesInfo(
        batch_count=count, record_count=records, size_bytes=n, max_batch_bytes=max_batch,
        producer_id=first[9], producer_epoch=first[10], is_transactional=bool(first[5] & TRANSACTIONAL_MASK),
        base_sequence=first[11], last_sequence=last_seq, first_timestamp=first[7], max_timestamp=max_ts,
        compression=first[5] & COMPRESSION_MASK, last_offset_delta=last[6],
    )


# --- the topic configs Produce checks ---------------------------------------------------------

@dataclass(frozen=True)
class ProducePolicy:
    """The topic configs Produce checks on every batch, parsed once per config change."""

    max_message_bytes: int = 1048588          # max.message.bytes: the largest batch a producer may send
    compacted: bool = False
    timestamp_before_max_ms: int = 2**63 - 1  # message.timestamp.before.max.ms
    timestamp_after_max_ms: int = 3_600_000   # message.timestamp.after.max.ms
    log_append_time: bool = False
    # compression.type as a codec id (protocol.batch.COMPRESSION_*); None for "producer"
    compression: int | None = None
    # that codec's compression.<codec>.level (KIP-390); None: the codec's default
    compression_level: int | None = None
    # acks=all needs at least this many in-sync replicas (NOT_ENOUGH_REPLICAS otherwise)
    min_insync_replicas: int = 1

    @classmethod
    def from_configs(cls, eff: Mapping[str, Any]) -> ProducePolicy:
        """The policy of a topic from its effective configs (its overrides over the broker's
        topic defaults)."""

        def number(key: str) -> int:
            return int(eff.get(key) or str(topic_config_default(key)))

        codec = TOPIC_CODECS.get(str(eff.get("compression.type") or "producer").lower())
        return cls(
            max_message_bytes=number("max.message.bytes"),
            compacted="compact" in str(eff["cleanup.policy"]),
            timestamp_before_max_ms=number("message.timestamp.before.max.ms"),
            timestamp_after_max_ms=number("message.timestamp.after.max.ms"),
            log_append_time=str(eff["message.timestamp.type"]) == "LogAppendTime",
            compression=codec,
            compression_level=_level(eff, codec),
            min_insync_replicas=number("min.insync.replicas"),
        )


# compression.type values -> codec ids
TOPIC_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


_LEVEL_KEYS = {1: "compression.gzip.level", 3: "compression.lz4.level", 4: "compression.zstd.level"}


def _level(configs: Mapping[str, Any], codec: int | None) -> int | None:
    key = _LEVEL_KEYS.get(codec) if codec is not None else None
    value = configs.get(key) if key is not None else None
    return None if value in (None, "") else int(value)



# --- one partition of a Produce request ---------------------------------------------------------

class ProduceTopic(Protocol):
    """What the rules read of a topic (broker.partition.Topic)."""

    @property
    def name(self) -> str: ...

    @property
    def policy(self) -> ProducePolicy: ...

    @property
    def internal(self) -> bool: ...


class ProducePartition(Protocol):
    """What the rules read of a partition (broker.partition.Partition)."""

    @property
    def topic(self) -> ProduceTopic: ...

    @property
    def index(self) -> int: ...

    @property
    def isr(self) -> list[int]: ...


class Refused(NamedTuple):
    """A partition's batch refused: Kafka's error code and message, and the records it names."""

    error: ErrorCode
    message: str | None = None
    record_errors: tuple[tuple[int, str], ...] = ()  # (index of the record in the batch, message)
    # Kafka answers the log start offset with errors raised while validating against the log
    # (timestamps, keys, producer state), and -1 with those found before (CRC, size, format)
    with_log_start_offset: bool = False


class Accepted(NamedTuple):
    """A batch the rules let through: the bytes to append (the producer's own, patched in place
    later, or the topic's recompression of them) and a view of their header."""

    records: bytes | bytearray
    header: BatchHeader
    is_transactional: bool


def validate_produce(part: ProducePartition, records: bytes | bytearray | None, acks: int,
                     not_leader: Refused | None) -> Union[Accepted, Refused]:
    """The broker's rules for one partition's batch of a Produce request, in Kafka's order (see
    the module's rules); `not_leader` is the answer of a node that does not lead the partition
    (None when it does), which Kafka gives after the internal-topic refusal. No await, no copy of
    the batch unless the topic recompresses it."""
    topic = part.topic
    if topic.internal:
        return Refused(ErrorCode.invalid_topic_exception, f"cannot write to internal topic {topic.name}")
    if not_leader is not None:
        return not_leader
    policy = topic.policy
    if acks == -1 and len(part.isr) < policy.min_insync_replicas:
        # Kafka's Partition.appendRecordsToLeader, before the log sees the batch
        return Refused(ErrorCode.not_enough_replicas, (
            f"The size of the current ISR {sorted(part.isr)} is insufficient to satisfy the min.isr requirement "
            f"of {policy.min_insync_replicas} for partition {topic.name}-{part.index}"))
    if not records:
        return Refused(ErrorCode.invalid_record, "a produce request needs one record batch per partition")
    max_bytes = policy.max_message_bytes
    if len(records) > max_bytes:
        return Refused(ErrorCode.message_too_large, f"batch of {len(records)} bytes exceeds max.message.bytes={max_bytes}")
    try:
        # one walk over the header: exactly one batch spanning `records`, its fields read once
        info = validate_produce_batches(records)
    except InvalidRecord as exc:
        return Refused(getattr(ErrorCode, exc.error_code_name.lower()), exc.message)
    refused = check_topic_policy(part, records, info.first_timestamp, info.max_timestamp)
    if refused is not None:
        return refused
    codec = policy.compression
    if codec is not None and info.compression != codec:
        # the topic's compression.type differs from the producer's codec: Kafka's LogValidator
        # rewrites the batch (only such topics pay for decoding and re-encoding)
        try:
            records = recompress_batch(records, codec, policy.compression_level)
        except Exception as exc:  # a codec we cannot read, or a batch whose records do not decode
            return Refused(ErrorCode.corrupt_message, f"cannot recompress the batch: {exc}")
        if len(records) > max_bytes:
            return Refused(ErrorCode.message_too_large, (
                f"batch of {len(records)} bytes after recompression exceeds max.message.bytes={max_bytes}"))
    return Accepted(records, BatchHeader(records, 0), info.is_transactional)


def _timestamps_refused(records: ReadableBuffer, policy: ProducePolicy, now: int, message: str) -> Refused:
    """INVALID_TIMESTAMP listing every record out of range by its index, as Kafka's LogValidator
    does (the records are decoded only on this error path)."""
    try:
        bad = tuple((i, message) for i, r in enumerate(decode_records(records))
                    if r.timestamp >= 0 and not now - policy.timestamp_before_max_ms <= r.timestamp
                    <= now + policy.timestamp_after_max_ms)
    except Exception:  # noqa: BLE001 - a codec we cannot read: the batch-level error stands
        bad = ()
    return Refused(ErrorCode.invalid_timestamp, message, bad, True)


def check_topic_policy(part: ProducePartition, records: ReadableBuffer, base_timestamp: int,
                       max_timestamp: int) -> Refused | None:
    """The topic-config checks of Kafka's LogValidator: CreateTime within
    message.timestamp.before/after.max.ms of now (KIP-937), and a key on every record of a
    compacted topic (the only check here that looks inside the batch, so only compacted
    topics pay for it). The timestamps are the batch header's."""
    policy = part.topic.policy
    if not policy.log_append_time:
        now = now_ms()
        if max_timestamp >= 0 and max_timestamp > now + policy.timestamp_after_max_ms:
            return _timestamps_refused(records, policy, now, (
                f"timestamp {max_timestamp} is more than message.timestamp.after.max.ms="
                f"{policy.timestamp_after_max_ms} ahead of the broker's time {now}"))
        if 0 <= base_timestamp < now - policy.timestamp_before_max_ms:
            return _timestamps_refused(records, policy, now, (
                f"timestamp {base_timestamp} is more than message.timestamp.before.max.ms="
                f"{policy.timestamp_before_max_ms} behind the broker's time {now}"))
    if policy.compacted:
        try:
            keyless = [i for i, r in enumerate(decode_records(records)) if r.key is None]
        except Exception as exc:  # a codec we cannot read: Kafka would fail decompression too
            return Refused(ErrorCode.corrupt_message, f"cannot read the batch: {exc}", (), True)
        if keyless:
            message = (f"Compacted topic cannot accept message without key in topic partition "
                       f"{part.topic.name}-{part.index}.")
            # Kafka lists every keyless record by its index in the batch
            return Refused(ErrorCode.invalid_record, message, tuple((i, message) for i in keyless), True)
    return None
