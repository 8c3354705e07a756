"""A failed write (ENOSPC, EIO) or fsync (fsync=always) while a coordinator appends to its log:
the group coordinator (OffsetCommit, JoinGroup/SyncGroup's group metadata, ConsumerGroupHeartbeat,
TxnOffsetCommit) and the transaction coordinator (InitProducerId, AddPartitionsToTxn, EndTxn)
answer NOT_COORDINATOR, as Kafka maps a KAFKA_STORAGE_ERROR append; the share coordinator answers
an acknowledgement it cannot write COORDINATOR_NOT_AVAILABLE (Kafka's SharePartition) and
AlterShareGroupOffsets, DeleteShareGroupOffsets and DeleteGroups NOT_COORDINATOR. The connection
stays, the coordinator's state does not move past what was written, and the same requests
succeed once the disk works again."""

from __future__ import annotations

import errno
import os
import time
import datetime
import uuid

import pytest
from kio.schema.errors import ErrorCode as E

from kafkalite.protocol.client import WireClient
from kafkalite.protocol.messages import make

from compat_tests.differ.core import request as req

from . import test_share_wire as share
from .test_groups_wire import _cgh, _commit, _fetch, join, mod, sync, topic
from .disk_faults import fail_fsync_while, fill_disk_while
from .test_produce_storage_errors import _with_broker
from .test_transactions_wire import _describe, _produce

import kio.schema.add_partitions_to_txn.v3.request as ap3
import kio.schema.end_txn.v3.request as et3
import kio.schema.init_producer_id.v4.request as ip4
import kio.schema.produce.v9.request as p9

MS = datetime.timedelta(milliseconds=1)
FAULTS = {"enospc-write": {}, "eio-fsync": {"fsync": "always"}}


@pytest.fixture(params=sorted(FAULTS))
def disk(request, monkeypatch):
    """`disk["bad"] = True` makes every log write fail with ENOSPC after a partial write (or,
    for eio-fsync with fsync=always, every fsync fail with EIO) until it is set back."""
    kind = request.param
    state = {"bad": False, "kind": kind, "values": FAULTS[kind]}
    if kind == "enospc-write":
        fill_disk_while(monkeypatch, state, "bad")
    else:
        fail_fsync_while(monkeypatch, state, "bad")
    return state


def _run(tmp_path, disk, exchange):
    def wrapped(address):
        with WireClient(address) as c:
            try:
                exchange(c)
            finally:
                disk["bad"] = False
            # the same connection still answers after every failure
            assert _describe(c, "never-used").error_code in (E.transactional_id_not_found, E.none)
        return True
    assert _with_broker(tmp_path, disk["values"], wrapped)


def _offset(c, group, name, tid):
    return _fetch(c, group, name, tid, [0]).groups[0].topics[0].partitions[0].committed_offset


def test_offset_commit(tmp_path, disk):
    def exchange(c):
        name, tid = topic(c)
        group = f"g-{uuid.uuid4().hex[:8]}"
        assert _commit(c, group, name, tid, {0: (5, -1, "")}).topics[0].partitions[0].error_code == E.none
        disk["bad"] = True
        r = _commit(c, group, name, tid, {0: (7, -1, "")})
        assert r.topics[0].partitions[0].error_code == E.not_coordinator
        fresh = f"g-{uuid.uuid4().hex[:8]}"
        assert _commit(c, fresh, name, tid, {0: (1, -1, "")}).topics[0].partitions[0].error_code == E.not_coordinator
        disk["bad"] = False
        assert _offset(c, group, name, tid) == 5          # the failed commit was not applied
        assert _offset(c, fresh, name, tid) == -1
        lg = mod("list_groups", 5)
        listed = c.request(make(lg.ListGroupsRequest, states_filter=(), types_filter=()))
        assert fresh not in {g.group_id for g in listed.groups}   # no group made by the failed commit
        assert _commit(c, group, name, tid, {0: (7, -1, "")}).topics[0].partitions[0].error_code == E.none
        assert _offset(c, group, name, tid) == 7
    _run(tmp_path, disk, exchange)


def _find_coordinator(c, group):
    """As a client does first: FindCoordinator creates __consumer_offsets (a failure to create it is
    broker/tests/test_topic_creation_errors.py's)."""
    m = mod("find_coordinator", 4)
    r = c.request(make(m.FindCoordinatorRequest, key_type=0, coordinator_keys=(group,)))
    assert r.coordinators[0].error_code == E.none


def test_join_and_sync_group(tmp_path, disk):
    def exchange(c):
        group = f"g-{uuid.uuid4().hex[:8]}"
        _find_coordinator(c, group)
        disk["bad"] = True
        # the group's first (empty) metadata record cannot be written: no group
        assert join(c, group).error_code == E.not_coordinator
        dg = mod("describe_groups", 5)
        d = c.request(make(dg.DescribeGroupsRequest, groups=(group,), include_authorized_operations=False))
        assert d.groups[0].group_state == "Dead"
        disk["bad"] = False
        first = join(c, group)
        assert first.error_code == E.member_id_required
        res = join(c, group, first.member_id)
        assert res.error_code == E.none and res.generation_id == 1
        disk["bad"] = True
        # the leader's assignment cannot be written: nobody gets it, and the group rebalances
        assert sync(c, group, res.member_id, 1, [(res.member_id, b"a")]).error_code == E.not_coordinator
        disk["bad"] = False
        assert sync(c, group, res.member_id, 1, [(res.member_id, b"a")]).error_code == E.rebalance_in_progress
        again = join(c, group, res.member_id)
        assert again.error_code == E.none and again.generation_id == 2
        ok = sync(c, group, res.member_id, 2, [(res.member_id, b"a")])
        assert ok.error_code == E.none and bytes(ok.assignment) == b"a"
    _run(tmp_path, disk, exchange)


def test_consumer_group_heartbeat(tmp_path, disk):
    def exchange(c):
        name, _tid = topic(c)
        group = f"cg-{uuid.uuid4().hex[:8]}"
        _find_coordinator(c, group)
        disk["bad"] = True
        r = _cgh(c, group, str(uuid.uuid4()), 0, topics=(name,))
        assert r.error_code == E.not_coordinator
        cd = mod("consumer_group_describe", 0)
        d = c.request(make(cd.ConsumerGroupDescribeRequest, group_ids=(group,), include_authorized_operations=False))
        assert d.groups[0].error_code == E.group_id_not_found      # the join was not kept
        disk["bad"] = False
        member = str(uuid.uuid4())
        r = _cgh(c, group, member, 0, topics=(name,))
        assert r.error_code == E.none and r.member_epoch >= 1
    _run(tmp_path, disk, exchange)


def _init(c, tid):
    r = c.request(ip4.InitProducerIdRequest(transactional_id=tid, transaction_timeout=60000 * MS, producer_id=-1,
                                            producer_epoch=-1))
    return r.error_code, r.producer_id, r.producer_epoch


def _add(c, tid, pid, epoch, name):
    r = c.request(ap3.AddPartitionsToTxnRequest(v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                                                v3_and_below_producer_epoch=epoch, v3_and_below_topics=(
        ap3.AddPartitionsToTxnTopic(name=name, partitions=(0,)),)))
    return r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code


def _end(c, tid, pid, epoch, commit=True):
    return c.request(et3.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                       committed=commit)).error_code


def test_transaction_log_writes(tmp_path, disk):
    def exchange(c):
        name, _ = topic(c)
        tid = f"tx-{uuid.uuid4().hex[:8]}"
        err, pid, epoch = _init(c, tid)
        assert err == E.none
        disk["bad"] = True
        assert _init(c, tid)[0] == E.not_coordinator
        assert _add(c, tid, pid, epoch, name) == E.not_coordinator
        disk["bad"] = False
        # no transaction was opened (EndTxn finds none) and the epoch did not move (the old one
        # is still accepted)
        assert _end(c, tid, pid, epoch) == E.invalid_txn_state
        assert _add(c, tid, pid, epoch, name) == E.none
        assert _produce(c, p9, tid, name, pid, epoch, 0).error_code == E.none
        disk["bad"] = True
        assert _end(c, tid, pid, epoch) == E.not_coordinator
        assert _describe(c, tid).transaction_state == "Ongoing"
        disk["bad"] = False
        assert _end(c, tid, pid, epoch) == E.none
        deadline = time.monotonic() + 10
        while (answer := _init(c, tid))[0] == E.concurrent_transactions and time.monotonic() < deadline:
            time.sleep(0.02)     # the commit markers are still being written
        assert answer == (E.none, pid, epoch + 1)
    _run(tmp_path, disk, exchange)


def test_txn_offset_commit(tmp_path, disk):
    def exchange(c):
        name, tid_ = topic(c)
        group = f"g-{uuid.uuid4().hex[:8]}"
        txid = f"tx-{uuid.uuid4().hex[:8]}"
        err, pid, epoch = _init(c, txid)
        assert err == E.none
        tm = mod("txn_offset_commit", 3)

        def commit(offset):
            r = c.request(make(tm.TxnOffsetCommitRequest, transactional_id=txid, group_id=group, producer_id=pid,
                               producer_epoch=epoch, generation_id=-1, member_id="", group_instance_id=None,
                               topics=(make(tm.TxnOffsetCommitRequestTopic, name=name, partitions=(
                                   make(tm.TxnOffsetCommitRequestPartition, partition_index=0,
                                        committed_offset=offset, committed_leader_epoch=-1,
                                        committed_metadata=""),)),)))
            return r.topics[0].partitions[0].error_code

        ao = mod("add_offsets_to_txn", 3)
        assert c.request(make(ao.AddOffsetsToTxnRequest, transactional_id=txid, producer_id=pid,
                              producer_epoch=epoch, group_id=group)).error_code == E.none
        disk["bad"] = True
        assert commit(42) == E.not_coordinator
        disk["bad"] = False
        stable = _fetch(c, group, name, tid_, [0], version=9, require_stable=True)
        assert stable.groups[0].topics[0].partitions[0].error_code == E.none   # nothing pending
        assert commit(43) == E.none
        assert _end(c, txid, pid, epoch) == E.none
        assert _offset(c, group, name, tid_) == 43
    _run(tmp_path, disk, exchange)


def test_a_producer_id_block_that_cannot_be_saved(tmp_path, monkeypatch):
    """InitProducerId when the next producer id block cannot be saved: COORDINATOR_LOAD_IN_PROGRESS
    (Kafka's answer while its producer id manager has no block), no id handed out twice, and
    ids again once the disk works."""
    from kafkalite.broker.transactions.producer_ids import ProducerIdManager

    from .test_transactions_core import make_core

    core, *_ = make_core()
    path = tmp_path / "producer_ids.json"
    core.pids = ProducerIdManager(path, block_size=2)
    real_replace = os.replace
    broken = {"on": False}

    def replace(src, dst):
        if broken["on"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)   # the rename that makes the block file durable
    seen = [core.init_producer_id(None, 60000)[1], core.init_producer_id(None, 60000)[1]]
    broken["on"] = True
    assert core.init_producer_id(None, 60000)[0] == E.coordinator_load_in_progress
    assert core.init_producer_id("tx-new", 60000)[0] == E.coordinator_load_in_progress
    assert "tx-new" not in core.txns
    broken["on"] = False
    err, pid, epoch = core.init_producer_id("tx-new", 60000)
    assert err == E.none and pid not in seen
    assert ProducerIdManager(path, block_size=2).generate() > pid   # after a restart: none reused


def test_share_state_writes(tmp_path, disk):
    def exchange(c):
        name, group = f"s-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
        tid = share.create_and_produce(c, name, 3)
        share.earliest(c, group)
        share.join(c, group, "m1", name)
        assert share.acquired(share.fetch(c, group, "m1", tid, 0)) == [(0, 2, 1)]

        def start_offset():
            r = c.request(req(90, 1, groups=[{"group_id": group, "topics": [{"topic_name": name, "partitions": [0]}]}]))
            return r.groups[0].topics[0].partitions[0].start_offset

        disk["bad"] = True
        accept = share.fetch(c, group, "m1", tid, 1, acks=[(0, 2, 1)])
        assert accept.responses[0].partitions[0].acknowledge_error_code == E.coordinator_not_available
        disk["bad"] = False
        assert start_offset() == 0
        # the acknowledgement was undone: the member still holds the records, and acknowledges them now
        accept = share.fetch(c, group, "m1", tid, 2, acks=[(0, 2, 1)])
        assert accept.responses[0].partitions[0].acknowledge_error_code == E.none
        assert start_offset() == 3
        leave = c.request(req(76, 1, group_id=group, member_id="m1", member_epoch=-1, rack_id=None,
                              subscribed_topic_names=None))
        assert leave.error_code == E.none
        alter = req(91, 0, group_id=group, topics=[
            {"topic_name": name, "partitions": [{"partition_index": 0, "start_offset": 1}]}])
        delete_offsets = req(92, 0, group_id=group, topics=[{"topic_name": name}])
        delete_group = req(42, 2, groups_names=[group])
        disk["bad"] = True
        assert c.request(alter).responses[0].partitions[0].error_code == E.not_coordinator
        assert c.request(delete_offsets).responses[0].error_code == E.not_coordinator
        assert c.request(delete_group).results[0].error_code == E.not_coordinator
        disk["bad"] = False
        assert start_offset() == 3
        assert c.request(alter).responses[0].partitions[0].error_code == E.none
        assert start_offset() == 1
        assert c.request(delete_offsets).responses[0].error_code == E.none
        assert start_offset() == -1
        assert c.request(delete_group).results[0].error_code == E.none
    _run(tmp_path, disk, exchange)
