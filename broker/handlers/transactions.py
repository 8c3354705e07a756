"""Transactions: InitProducerId (22) v0-5, AddPartitionsToTxn (24) v0-5, AddOffsetsToTxn (25)
v0-4, EndTxn (26) v0-5, WriteTxnMarkers (27) v1-2, TxnOffsetCommit (28) v0-5,
DescribeProducers (61) v0, DescribeTransactions (65) v0, ListTransactions (66) v0-2.

- InitProducerId without a transactional id hands out a fresh producer id with epoch 0 (the
  idempotent producer, also on its KIP-360 re-init). With one, it bumps the epoch, fencing the
  previous incarnation; an open transaction is aborted first and the client is told
  CONCURRENT_TRANSACTIONS so that it retries. v3+ ProducerId/ProducerEpoch resume (KIP-360).
- EndTxn answers once PrepareCommit/PrepareAbort is durable; the markers follow. v5 (KIP-890
  transactions v2) bumps the epoch on every transaction and returns the id and epoch to use
  next; v0-v4 keep Kafka's transactions v1 rules.
- AddPartitionsToTxn v0-v3 is the client's; v4+ is batched (one entry per transactional id)
  and may be VerifyOnly (KIP-890 part 1), answering per partition NONE or
  TRANSACTION_ABORTABLE.
- TxnOffsetCommit checks the transaction (v5: adds the group's __consumer_offsets partition
  to it, KIP-890; before: that partition must have been added by AddOffsetsToTxn), then the
  group coordinator checks generation, member id and group instance id (KIP-447) and keeps
  the offsets pending until the marker.
- PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH to the versions that predate it
  (InitProducerId < 4, AddPartitionsToTxn/AddOffsetsToTxn/EndTxn < 2).
- WriteTxnMarkers writes COMMIT/ABORT markers with the same code the coordinator uses.
- On a node that does not coordinate the transactional id, InitProducerId (with one),
  AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and DescribeTransactions answer NOT_COORDINATOR
  (ListTransactions lists the ids the node coordinates); TxnOffsetCommit answers it on a node
  that does not coordinate the group (broker.handlers.leadership).
  DescribeProducers on a node that is not a replica of the partition is NOT_LEADER_OR_FOLLOWER.
- With an authorizer: InitProducerId, AddOffsetsToTxn, EndTxn, TxnOffsetCommit and the
  client's AddPartitionsToTxn (v0-v3) need WRITE on the transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent InitProducerId needs IDEMPOTENT_WRITE on
  the cluster or WRITE on some topic (KIP-679, else CLUSTER_AUTHORIZATION_FAILED);
  AddOffsetsToTxn and TxnOffsetCommit READ on the group; AddPartitionsToTxn WRITE and
  TxnOffsetCommit READ on each topic; the brokers' AddPartitionsToTxn (v4+) and WriteTxnMarkers
  CLUSTER_ACTION; DescribeProducers READ per topic; DescribeTransactions and ListTransactions
  DESCRIBE per transactional id (and list only the topics the principal may DESCRIBE).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any, TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkalite.protocol.error_responses import kafka_message
from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..clock import now_ms
from ..authorizer import AclOperation, ResourceType, allowed, allowed_any, allowed_cluster, allowed_names
from . import api
from .common import response_module
from .leadership import coordinator_partition, group_coordinator_error, partition_error, transaction_coordinator_error

if TYPE_CHECKING:
    from ..transactions.coordinator import TransactionCoordinator

E = ErrorCode
_MS = timedelta(milliseconds=1)


def _coordinator(ctx: RequestContext) -> TransactionCoordinator:
    return ctx.broker.services.transactions


def _time(ms: int) -> datetime:
    """A datetime_i64 field; kio cannot write None, and Kafka sends -1 for "no time"."""
    return datetime.fromtimestamp(ms / 1000, timezone.utc)


def _fenced(err: ErrorCode, version: int, first_version: int) -> ErrorCode:
    if err == E.producer_fenced and version < first_version:
        return E.invalid_producer_epoch
    return err


# --- InitProducerId ------------------------------------------------------------------------------

@api(22, 0, 5)
async def init_producer_id(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    timeout_ms = request.transaction_timeout // _MS
    pid = getattr(request, "producer_id", -1)
    epoch = getattr(request, "producer_epoch", -1)
    expected = (pid, epoch) if pid != -1 else None
    refused = None
    if request.transactional_id is not None:
        if not _may_write_tid(ctx, request.transactional_id):
            refused = E.transactional_id_authorization_failed
    elif not (allowed_cluster(ctx, AclOperation.IDEMPOTENT_WRITE)
              or allowed_any(ctx, AclOperation.WRITE, ResourceType.TOPIC)):
        # KIP-679: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
        refused = E.cluster_authorization_failed
    if refused is None:
        refused = transaction_coordinator_error(ctx, request.transactional_id)
    if refused is not None:
        return make(mod.InitProducerIdResponse, throttle_time=0, error_code=refused, producer_id=-1,
                    producer_epoch=-1)
    if request.transactional_id is None:
        from ..transactions.core import idempotent_producer_id

        err, pid, epoch = idempotent_producer_id(ctx.broker.services.producer_ids)
    else:
        err, pid, epoch = _coordinator(ctx).core.init_producer_id(request.transactional_id, timeout_ms, expected)
    return make(mod.InitProducerIdResponse, throttle_time=0, error_code=_fenced(err, ctx.api_version, 4),
                producer_id=pid, producer_epoch=epoch)


# --- AddPartitionsToTxn --------------------------------------------------------------------------

def _partition_errors(ctx: RequestContext, topics) -> tuple[list, dict]:
    """The requested (topic, partition)s and the ones that do not exist."""
    cluster = ctx.cluster
    wanted, missing = [], {}
    for t in topics:
        for p in t.partitions:
            tp = (t.name, p)
            wanted.append(tp)
            if cluster.partition(t.name, p) is None:
                missing[tp] = E.unknown_topic_or_partition
    return wanted, missing


def _may_write_tid(ctx: RequestContext, transactional_id: str) -> bool:
    return allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)


def _add_one(ctx: RequestContext, txn, tid, pid, epoch, topics, *, verify_only=False, client_tv=0, client=False) -> dict:
    if client and ctx.broker.authorizer is not None:
        # the client's AddPartitionsToTxn (v0-v3): WRITE on the transactional id, then on each topic
        if not _may_write_tid(ctx, tid):
            return {(t.name, p): E.transactional_id_authorization_failed for t in topics for p in t.partitions}
        writable = allowed_names(ctx, AclOperation.WRITE, ResourceType.TOPIC,
                                 (t.name for t in topics if not t.name.startswith("__")))
        assert writable is not None
        refused = {(t.name, p): E.topic_authorization_failed for t in topics for p in t.partitions
                   if not t.name.startswith("__") and t.name not in writable}
        if refused:
            wanted, missing = _partition_errors(ctx, topics)
            return {tp: refused.get(tp) or missing.get(tp) or E.operation_not_attempted for tp in wanted}
    wanted, missing = _partition_errors(ctx, topics)
    if client and (not_coordinator := transaction_coordinator_error(ctx, tid)) is not None:
        return {tp: not_coordinator for tp in wanted}
    if missing:
        return {tp: missing.get(tp, E.operation_not_attempted) for tp in wanted}
    if verify_only:
        return txn.core.verify_partitions(tid, pid, epoch, wanted)
    err = txn.core.add_partitions(tid, pid, epoch, wanted, client_tv=client_tv)
    return {tp: err for tp in wanted}


def _topic_results(mod, errors: dict):
    by_topic: dict[str, list] = {}
    for (topic, p), err in errors.items():
        by_topic.setdefault(topic, []).append(
            make(mod.AddPartitionsToTxnPartitionResult, partition_index=p, partition_error_code=err))
    return tuple(make(mod.AddPartitionsToTxnTopicResult, name=t, results_by_partition=tuple(rs))
                 for t, rs in by_topic.items())


@api(24, 0, 5)
async def add_partitions_to_txn(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    txn = _coordinator(ctx)
    v = ctx.api_version
    if v <= 3:
        errors = _add_one(ctx, txn, request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
                          request.v3_and_below_producer_epoch, request.v3_and_below_topics, client=True)
        errors = {tp: _fenced(e, v, 2) for tp, e in errors.items()}
        return make(mod.AddPartitionsToTxnResponse, throttle_time=0, results_by_topic_v3_and_below=_topic_results(mod, errors))
    if not allowed_cluster(ctx, AclOperation.CLUSTER_ACTION):
        # v4+ is the brokers' own request
        return make(mod.AddPartitionsToTxnResponse, throttle_time=0, error_code=E.cluster_authorization_failed,
                    results_by_transaction=())
    results = []
    for t in request.transactions:
        # v4+ comes from partition leaders: a non-verify add is KIP-890 part 2 (transactions v2)
        errors = _add_one(ctx, txn, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
                          verify_only=t.verify_only, client_tv=2 if v >= 5 else 0)
        results.append(make(mod.AddPartitionsToTxnResult, transactional_id=t.transactional_id,
                            topic_results=_topic_results(mod, errors)))
    return make(mod.AddPartitionsToTxnResponse, throttle_time=0, error_code=E.none,
                results_by_transaction=tuple(results))


# --- AddOffsetsToTxn -----------------------------------------------------------------------------

@api(25, 0, 4)
async def add_offsets_to_txn(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    txn = _coordinator(ctx)
    if not _may_write_tid(ctx, request.transactional_id):
        err = E.transactional_id_authorization_failed
    elif not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        err = E.group_authorization_failed
    elif (refused := transaction_coordinator_error(ctx, request.transactional_id)) is not None:
        err = refused
    elif not request.group_id:
        err = E.invalid_group_id
    elif (part := coordinator_partition(ctx, False, request.group_id)) is None:
        err = E.coordinator_not_available
    else:
        err = txn.core.add_partitions(request.transactional_id, request.producer_id, request.producer_epoch,
                                      [(part.topic.name, part.index)], client_tv=0)
    return make(mod.AddOffsetsToTxnResponse, throttle_time=0, error_code=_fenced(err, ctx.api_version, 2))


# --- EndTxn --------------------------------------------------------------------------------------

@api(26, 0, 5)
async def end_txn(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    txn = _coordinator(ctx)
    client_tv = 2 if ctx.api_version >= 5 else 0
    if not _may_write_tid(ctx, request.transactional_id):
        return make(mod.EndTxnResponse, throttle_time=0, error_code=E.transactional_id_authorization_failed,
                    producer_id=-1, producer_epoch=-1)
    if (refused := transaction_coordinator_error(ctx, request.transactional_id)) is not None:
        return make(mod.EndTxnResponse, throttle_time=0, error_code=refused, producer_id=-1, producer_epoch=-1)
    res = txn.end_txn(request.transactional_id, request.producer_id, request.producer_epoch, request.committed,
                      client_tv)
    return make(mod.EndTxnResponse, throttle_time=0, error_code=_fenced(res.error, ctx.api_version, 2),
                producer_id=res.producer_id, producer_epoch=res.producer_epoch)


# --- WriteTxnMarkers -----------------------------------------------------------------------------

@api(27, 1, 2)
async def write_txn_markers(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    results = []
    if not (allowed_cluster(ctx, AclOperation.ALTER) or allowed_cluster(ctx, AclOperation.CLUSTER_ACTION)):
        return make(mod.WriteTxnMarkersResponse, markers=tuple(
            make(mod.WritableTxnMarkerResult, producer_id=m.producer_id, topics=tuple(
                make(mod.WritableTxnMarkerTopicResult, name=t.name, partitions=tuple(
                    make(mod.WritableTxnMarkerPartitionResult, partition_index=p,
                         error_code=E.cluster_authorization_failed) for p in t.partition_indexes))
                for t in m.topics))
            for m in request.markers))
    from ..transactions.markers import write_markers_durably

    for m in request.markers:
        wanted = [(t.name, p) for t in m.topics for p in t.partition_indexes]
        errors = await write_markers_durably(ctx.broker, m.producer_id, m.producer_epoch, m.coordinator_epoch,
                                             m.transaction_result, wanted)
        topics = tuple(
            make(mod.WritableTxnMarkerTopicResult, name=t.name, partitions=tuple(
                make(mod.WritableTxnMarkerPartitionResult, partition_index=p, error_code=errors[(t.name, p)])
                for p in t.partition_indexes))
            for t in m.topics)
        results.append(make(mod.WritableTxnMarkerResult, producer_id=m.producer_id, topics=topics))
    return make(mod.WriteTxnMarkersResponse, markers=tuple(results))


# --- TxnOffsetCommit -----------------------------------------------------------------------------

def _txn_offset_check(ctx: RequestContext, txn, groups, request) -> ErrorCode:
    part = groups.offsets_partition(request.group_id)
    tp = (part.topic.name, part.index)
    v = ctx.api_version
    err = txn.add_or_verify_partition(request.transactional_id, request.producer_id, request.producer_epoch, tp,
                                      add=v >= 5, knows_abortable=v >= 4)
    if err == E.producer_fenced:
        return E.invalid_producer_epoch
    if err in (E.concurrent_transactions, E.coordinator_load_in_progress, E.not_enough_replicas):
        return E.coordinator_not_available
    return err


@api(28, 0, 5)
async def txn_offset_commit(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    txn = _coordinator(ctx)
    groups = ctx.broker.services.groups
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    readable = None
    err: E
    errors: dict[tuple[str, int], E]
    if not _may_write_tid(ctx, request.transactional_id):
        err = E.transactional_id_authorization_failed
    elif not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        err = E.group_authorization_failed
    else:
        readable = allowed_names(ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
        err = E.none
    refused: dict[tuple[str, int], E] = {} if readable is None else {
        (t.name, p.partition_index): E.topic_authorization_failed
        for t in request.topics if t.name not in readable for p in t.partitions}
    if err == E.none and not (refused and len(refused) == len(wanted)):
        err = group_coordinator_error(ctx, request.group_id) or _txn_offset_check(ctx, txn, groups, request)
    if err != E.none:
        errors = {tp: err for tp in wanted}
    elif refused and len(refused) == len(wanted):
        # nothing left to commit: Kafka answers without asking the coordinator
        errors = refused
    else:
        offsets = {(t.name, p.partition_index): (p.committed_offset, getattr(p, "committed_leader_epoch", -1),
                                                  p.committed_metadata)
                   for t in request.topics for p in t.partitions if (t.name, p.partition_index) not in refused}
        errors = groups.stage_txn_offsets(
            request.group_id, producer_id=request.producer_id, producer_epoch=request.producer_epoch,
            generation_id=getattr(request, "generation_id", -1), member_id=getattr(request, "member_id", ""),
            group_instance_id=getattr(request, "group_instance_id", None), offsets=offsets, now_ms=now_ms())
        errors = {**errors, **refused}
    by_topic: dict[str, list] = {}
    for tp in wanted:
        by_topic.setdefault(tp[0], []).append(
            make(mod.TxnOffsetCommitResponsePartition, partition_index=tp[1], error_code=errors.get(tp, E.none)))
    return make(mod.TxnOffsetCommitResponse, throttle_time=0, topics=tuple(
        make(mod.TxnOffsetCommitResponseTopic, name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))


# --- DescribeProducers ---------------------------------------------------------------------------

@api(61, 0, 0)
async def describe_producers(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    topics = []
    for t in request.topics:
        parts = []
        readable = allowed(ctx, AclOperation.READ, ResourceType.TOPIC, t.name)
        for p in t.partition_indexes:
            part = ctx.cluster.partition(t.name, p)
            if not readable:
                parts.append(make(mod.PartitionResponse, partition_index=p, error_code=E.topic_authorization_failed,
                                  error_message=kafka_message(E.topic_authorization_failed), active_producers=()))
                continue
            # any replica answers with its producer state (Kafka's Partition.activeProducerState)
            refused = (E.unknown_topic_or_partition if part is None
                       else partition_error(ctx, part, follower_reads=True))
            if refused is not None or part is None:
                # a topic Kafka does not know is answered with the error's default message; a
                # partition it does not have, and a replica's own refusals, with none
                unknown_topic = t.name not in ctx.cluster.topics
                parts.append(make(mod.PartitionResponse, partition_index=p, error_code=refused,
                                  error_message=kafka_message(refused) if unknown_topic and refused else None,
                                  active_producers=()))
                continue
            active = tuple(
                make(mod.ProducerState, producer_id=e.producer_id, producer_epoch=e.epoch, last_sequence=e.last_seq,
                     last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                     current_txn_start_offset=-1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
                for e in part.producers.entries.values())
            parts.append(make(mod.PartitionResponse, partition_index=p, error_code=E.none, error_message=None,
                              active_producers=active))
        topics.append(make(mod.TopicResponse, name=t.name, partitions=tuple(parts)))
    return make(mod.DescribeProducersResponse, throttle_time=0, topics=tuple(topics))


# --- DescribeTransactions / ListTransactions -------------------------------------------------------

@api(65, 0, 0)
async def describe_transactions(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    txn = _coordinator(ctx)
    states = []
    for tid in request.transactional_ids:
        if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            err, md = E.transactional_id_authorization_failed, None
        elif (refused := transaction_coordinator_error(ctx, tid)) is not None:
            err, md = refused, None
        else:
            err, md = txn.core.describe(tid)
        if md is None:
            # Kafka leaves every other field at zero (a start time of 0, producer id 0)
            states.append(make(mod.TransactionState, error_code=err, transactional_id=tid, transaction_state="",
                               transaction_timeout=0, transaction_start_time=_time(0), producer_id=0,
                               producer_epoch=0, topics=()))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(md.partitions):
            if not allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic):
                continue  # only partitions the principal may describe are listed
            by_topic.setdefault(topic, []).append(p)
        states.append(make(mod.TransactionState, error_code=E.none, transactional_id=tid,
                           transaction_state=md.state.kafka_name, transaction_timeout=md.timeout_ms,
                           transaction_start_time=_time(md.start_ms), producer_id=md.producer_id,
                           producer_epoch=md.producer_epoch,
                           topics=tuple(make(mod.TopicData, topic=t, partitions=tuple(ps)) for t, ps in by_topic.items())))
    return make(mod.DescribeTransactionsResponse, throttle_time=0, transaction_states=tuple(states))


@api(66, 0, 2)
async def list_transactions(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    txn = _coordinator(ctx)
    pattern = None
    text = getattr(request, "transactional_id_pattern", None)
    if text:
        try:
            pattern = re.compile(text)
        except re.error:
            return make(mod.ListTransactionsResponse, throttle_time=0, error_code=E.invalid_regular_expression,
                        unknown_state_filters=(), transaction_states=())
    found, unknown = txn.core.list(list(request.state_filters), list(request.producer_id_filters),
                                   getattr(request, "duration_filter", -1), pattern)
    if ctx.broker.authorizer is not None:
        found = [md for md in found
                 if allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, md.transactional_id)]
    return make(mod.ListTransactionsResponse, throttle_time=0, error_code=E.none,
                unknown_state_filters=tuple(unknown),
                transaction_states=tuple(make(mod.TransactionState, transactional_id=md.transactional_id,
                                              producer_id=md.producer_id, transaction_state=md.state.kafka_name)
                                         for md in found
                                         # each node lists the transactional ids it coordinates
                                         if transaction_coordinator_error(ctx, md.transactional_id) is None))
