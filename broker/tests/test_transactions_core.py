"""The transaction coordinator's state machine, with a fake clock, an in-memory
__transaction_state and a fake marker writer."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode as E

from kafkalite.broker.transactions.core import TxnCoordinatorCore
from kafkalite.broker.internal_topics import partition_for
from kafkalite.broker.transactions.log import TxnLogValue, decode_key, decode_value, encode_key, encode_value
from kafkalite.broker.transactions.producer_ids import ProducerIdManager
from kafkalite.broker.transactions.state import TxnState as S


class Clock:
    def __init__(self, t: int = 1_000_000):
        self.t = t

    def __call__(self) -> int:
        return self.t


class MemoryStore:
    def __init__(self):
        self.records: list = []  # (tid, value bytes | None)
        self.fail = False

    def append(self, tid, transit):
        if self.fail:
            raise OSError("disk full")
        value = None
        if transit is not None:
            value = encode_value(TxnLogValue(transit.producer_id, transit.producer_epoch, transit.timeout_ms,
                                             int(transit.state), set(transit.partitions), transit.last_update_ms,
                                             transit.start_ms, transit.prev_producer_id, transit.next_producer_id,
                                             transit.client_tv))
        self.records.append((encode_key(tid), value))

    def last_values(self):
        out = {}
        for k, v in self.records:
            out[decode_key(k)] = decode_value(v)
        return out


class Markers:
    def __init__(self):
        self.calls = []
        self.fail: dict = {}

    def __call__(self, pid, epoch, cepoch, commit, parts):
        self.calls.append((pid, epoch, commit, sorted(parts)))
        return {tp: self.fail.get(tp, E.none) for tp in parts}


def make_core(tmp_path=None, **kw):
    clock = Clock()
    store = MemoryStore()
    markers = Markers()
    prepared = []
    core = TxnCoordinatorCore(store=store, producer_ids=ProducerIdManager(None), clock=clock,
                              on_prepared=prepared.append, **kw)
    return core, clock, store, markers, prepared


def write_markers(core, markers, tid):
    """What the coordinator service does for a prepared transaction, with the fake markers."""
    job = core.markers_due(tid)
    results = {}
    if job is not None and job.partitions:
        results = markers(job.producer_id, job.producer_epoch, job.coordinator_epoch, job.commit,
                                    job.partitions)
    return core.finish_markers(tid, results)


TP0 = ("t", 0)
TP1 = ("t", 1)


def init(core, tid="tx", timeout=60_000, expected=None):
    err, pid, epoch = core.init_producer_id(tid, timeout, expected)
    assert err == E.none
    return pid, epoch


# --- InitProducerId ----------------------------------------------------------------------------

def test_idempotent_producers_get_unique_ids():
    core, *_ = make_core()
    ids = {core.init_producer_id(None, 0)[1] for _ in range(2500)}
    assert len(ids) == 2500


def test_producer_ids_survive_restart(tmp_path):
    path = tmp_path / "producer_ids.json"
    m = ProducerIdManager(path, block_size=10)
    first = [m.generate() for _ in range(15)]
    m2 = ProducerIdManager(path, block_size=10)  # a crash: the rest of the block is skipped
    second = [m2.generate() for _ in range(15)]
    assert not set(first) & set(second)
    m3 = ProducerIdManager(path, block_size=10)
    m3.ensure_above(500)
    assert m3.generate() == 501
    assert ProducerIdManager(path, block_size=10).generate() > 501


def test_init_errors():
    core, *_ = make_core(max_timeout_ms=1000)
    assert core.init_producer_id("", 100)[0] == E.invalid_request
    assert core.init_producer_id("x", 1001)[0] == E.invalid_transaction_timeout
    assert core.init_producer_id("x", 0)[0] == E.invalid_transaction_timeout


def test_init_bumps_epoch_and_fences_previous_incarnation():
    core, *_ = make_core()
    pid, e0 = init(core)
    assert e0 == 0
    pid2, e1 = init(core)
    assert (pid2, e1) == (pid, 1)
    # the old incarnation is fenced on the coordinator
    assert core.add_partitions("tx", pid, 0, [TP0]) == E.producer_fenced
    assert core.end_txn("tx", pid, 0, True).error == E.producer_fenced


def test_kip360_reinit_with_current_id_and_epoch():
    core, *_ = make_core()
    pid, e = init(core)
    assert init(core, expected=(pid, e)) == (pid, e + 1)
    # a retry of that call (its answer was lost) gets the same epoch again
    assert init(core, expected=(pid, e)) == (pid, e + 1)
    # an epoch that is neither current nor previous is fenced
    init(core)  # someone else bumps to e+2, last epoch forgotten
    assert core.init_producer_id("tx", 60_000, (pid, e))[0] == E.producer_fenced
    assert core.init_producer_id("tx", 60_000, (pid + 99, 0))[0] == E.producer_fenced


def test_init_while_ongoing_aborts_then_concurrent_transactions():
    core, clock, store, markers, prepared = make_core()
    pid, e = init(core)
    assert core.add_partitions("tx", pid, e, [TP0, TP1]) == E.none
    err, _, _ = core.init_producer_id("tx", 60_000)
    assert err == E.concurrent_transactions
    md = core.txns["tx"]
    assert md.state == S.PREPARE_ABORT
    assert md.producer_epoch == e + 2  # fenced (+1), then the TV2 abort bumps once more
    assert prepared == ["tx"]
    # until the markers are written the client keeps getting CONCURRENT_TRANSACTIONS
    assert core.init_producer_id("tx", 60_000)[0] == E.concurrent_transactions
    assert write_markers(core, markers, "tx")
    assert markers.calls == [(pid, e + 2, False, [TP0, TP1])]
    assert md.state == S.COMPLETE_ABORT
    assert init(core) == (pid, e + 3)


def test_init_on_epoch_exhaustion_rotates_producer_id():
    core, *_ = make_core()
    pid, _ = init(core)
    md = core.txns["tx"]
    md.producer_epoch = 32766
    pid2, e = init(core)
    assert pid2 != pid and e == 0
    assert md.prev_producer_id == pid


# --- AddPartitions / verification -------------------------------------------------------------

def test_add_partitions_errors_and_idempotence():
    core, clock, store, *_ = make_core()
    assert core.add_partitions("nope", 1, 0, [TP0]) == E.invalid_producer_id_mapping
    pid, e = init(core)
    assert core.add_partitions("tx", pid + 1, e, [TP0]) == E.invalid_producer_id_mapping
    assert core.add_partitions("tx", pid, e + 1, [TP0]) == E.producer_fenced
    n = len(store.records)
    assert core.add_partitions("tx", pid, e, [TP0]) == E.none
    assert core.txns["tx"].state == S.ONGOING and core.txns["tx"].start_ms == clock.t
    assert len(store.records) == n + 1
    assert core.add_partitions("tx", pid, e, [TP0]) == E.none  # already there: nothing written
    assert len(store.records) == n + 1
    assert core.verify_partitions("tx", pid, e, [TP0, TP1]) == {TP0: E.none, TP1: E.transaction_abortable}
    assert core.verify_partitions("tx", pid, e - 1, [TP0]) == {TP0: E.producer_fenced}


def test_failed_log_write_leaves_state_unchanged():
    core, clock, store, *_ = make_core()
    pid, e = init(core)
    store.fail = True
    assert core.add_partitions("tx", pid, e, [TP0]) == E.not_coordinator  # KAFKA_STORAGE_ERROR, as Kafka maps it
    md = core.txns["tx"]
    assert md.state == S.EMPTY and not md.partitions and md.pending_state is None
    store.fail = False
    assert core.add_partitions("tx", pid, e, [TP0]) == E.none


# --- EndTxn, transactions v1 ---------------------------------------------------------------------

def test_end_txn_v1_commit_then_markers():
    core, clock, store, markers, prepared = make_core()
    pid, e = init(core)
    assert core.end_txn("tx", pid, e, True).error == E.invalid_txn_state  # Empty
    core.add_partitions("tx", pid, e, [TP0, TP1])
    res = core.end_txn("tx", pid, e, True)
    assert (res.error, res.producer_id, res.producer_epoch) == (E.none, -1, -1)
    md = core.txns["tx"]
    assert md.state == S.PREPARE_COMMIT and md.producer_epoch == e
    # between the prepare and the markers
    assert core.end_txn("tx", pid, e, True).error == E.concurrent_transactions
    assert core.end_txn("tx", pid, e, False).error == E.invalid_txn_state
    assert core.add_partitions("tx", pid, e, [TP0]) == E.concurrent_transactions
    assert core.verify_partitions("tx", pid, e, [TP0]) == {TP0: E.concurrent_transactions}
    assert write_markers(core, markers, "tx")
    assert markers.calls == [(pid, e, True, [TP0, TP1])]
    assert md.state == S.COMPLETE_COMMIT and not md.partitions
    # a retried commit is fine; abort is not
    assert core.end_txn("tx", pid, e, True).error == E.none
    assert core.end_txn("tx", pid, e, False).error == E.invalid_txn_state
    # next transaction with the same epoch
    assert core.add_partitions("tx", pid, e, [TP1]) == E.none
    assert core.end_txn("tx", pid, e, False).error == E.none
    write_markers(core, markers, "tx")
    assert md.state == S.COMPLETE_ABORT
    assert core.end_txn("tx", pid, e, False).error == E.none
    assert core.end_txn("tx", pid, e, True).error == E.invalid_txn_state


def test_markers_retry_failed_partitions():
    core, clock, store, markers, _ = make_core()
    pid, e = init(core)
    core.add_partitions("tx", pid, e, [TP0, TP1])
    core.end_txn("tx", pid, e, True)
    markers.fail = {TP1: E.kafka_storage_error}
    assert not write_markers(core, markers, "tx")
    assert core.txns["tx"].partitions == {TP1}
    markers.fail = {}
    assert write_markers(core, markers, "tx")
    assert markers.calls[-1] == (pid, e, True, [TP1])
    assert core.txns["tx"].state == S.COMPLETE_COMMIT


# --- EndTxn, transactions v2 (KIP-890) -----------------------------------------------------------

def test_end_txn_v2_bumps_epoch_every_transaction():
    core, clock, store, markers, _ = make_core()
    pid, e = init(core)
    core.add_partitions("tx", pid, e, [TP0], client_tv=2)
    res = core.end_txn("tx", pid, e, True, client_tv=2)
    assert (res.error, res.producer_id, res.producer_epoch) == (E.none, pid, e + 1)
    assert core.end_txn("tx", pid, e, True, client_tv=2).error == E.concurrent_transactions  # retry while prepared
    write_markers(core, markers, "tx")
    assert markers.calls == [(pid, e + 1, True, [TP0])]
    # a retry of the commit (the old epoch) is acknowledged with the current epoch
    res = core.end_txn("tx", pid, e, True, client_tv=2)
    assert (res.error, res.producer_epoch) == (E.none, e + 1)
    # the old epoch cannot add partitions any more
    assert core.add_partitions("tx", pid, e, [TP0], client_tv=2) == E.producer_fenced


@pytest.mark.parametrize("state,commit,retry,expected", [
    (S.EMPTY, False, True, E.producer_fenced),
    (S.EMPTY, False, False, "bump"),
    (S.EMPTY, True, True, E.producer_fenced),
    (S.EMPTY, True, False, E.invalid_txn_state),
    (S.COMPLETE_ABORT, False, True, E.none),
    (S.COMPLETE_ABORT, False, False, "bump"),
    (S.COMPLETE_ABORT, True, True, E.invalid_txn_state),
    (S.COMPLETE_ABORT, True, False, E.invalid_txn_state),
    (S.COMPLETE_COMMIT, False, True, E.invalid_txn_state),
    (S.COMPLETE_COMMIT, False, False, "bump"),
    (S.COMPLETE_COMMIT, True, True, E.none),
    (S.COMPLETE_COMMIT, True, False, E.invalid_txn_state),
])
def test_end_txn_v2_table(state, commit, retry, expected):
    """Kafka's table for Empty/CompleteAbort/CompleteCommit under transactions v2."""
    core, clock, store, markers, prepared = make_core()
    pid, _ = init(core)
    init(core)  # epoch 1, so that epoch - 1 is a valid "retry"
    md = core.txns["tx"]
    md.state = state
    cur = md.producer_epoch
    res = core.end_txn("tx", pid, cur - 1 if retry else cur, commit, client_tv=2)
    if expected == "bump":
        assert res.error == E.none and res.producer_epoch == cur + 1
        assert md.state == S.PREPARE_ABORT
        assert write_markers(core, markers, "tx") and md.state == S.COMPLETE_ABORT
    else:
        assert res.error == expected
        assert md.state == state


def test_end_txn_v2_wrong_producer_id():
    core, *_ = make_core()
    pid, e = init(core)
    assert core.end_txn("tx", pid + 5, e, False, client_tv=2).error == E.invalid_producer_id_mapping


def test_end_txn_v2_epoch_overflow_rotates_producer_id():
    core, clock, store, markers, _ = make_core()
    pid, e = init(core)
    md = core.txns["tx"]
    md.producer_epoch = 32766
    core.add_partitions("tx", pid, 32766, [TP0], client_tv=2)
    res = core.end_txn("tx", pid, 32766, True, client_tv=2)
    assert res.error == E.none and res.producer_id != pid and res.producer_epoch == 0
    write_markers(core, markers, "tx")
    assert markers.calls == [(pid, 32767, True, [TP0])]
    assert (md.producer_id, md.producer_epoch, md.prev_producer_id) == (res.producer_id, 0, pid)
    # a retry from the client that did not see the answer
    res2 = core.end_txn("tx", pid, 32766, True, client_tv=2)
    assert (res2.error, res2.producer_id, res2.producer_epoch) == (E.none, res.producer_id, 0)


# --- timeouts --------------------------------------------------------------------------------------

def test_timeout_aborts_and_fences():
    core, clock, store, markers, prepared = make_core()
    pid, e = init(core, timeout=5000)
    core.add_partitions("tx", pid, e, [TP0])
    clock.t += 5000
    assert core.abort_timed_out() == []  # not older than the timeout yet
    clock.t += 1
    assert core.abort_timed_out() == ["tx"]
    md = core.txns["tx"]
    assert md.state == S.PREPARE_ABORT and md.producer_epoch > e
    write_markers(core, markers, "tx")
    assert md.state == S.COMPLETE_ABORT
    assert markers.calls[0][1] == md.producer_epoch and markers.calls[0][2] is False
    # the producer is fenced
    assert core.end_txn("tx", pid, e, True).error == E.producer_fenced
    assert core.add_partitions("tx", pid, e, [TP0]) == E.producer_fenced
    # nothing left to time out
    clock.t += 100_000
    assert core.abort_timed_out() == []


def test_timeout_measured_from_transaction_start():
    core, clock, *_ = make_core()
    pid, e = init(core, timeout=5000)
    core.add_partitions("tx", pid, e, [TP0])
    clock.t += 4000
    core.add_partitions("tx", pid, e, [TP1])  # activity does not extend the deadline
    clock.t += 1001
    assert core.abort_timed_out() == ["tx"]


def test_transactional_id_expiry():
    core, clock, store, *_ = make_core(id_expiration_ms=1000)
    pid, e = init(core)
    clock.t += 1001
    assert core.expire_transactional_ids() == ["tx"]
    assert "tx" not in core.txns
    assert store.last_values()["tx"] is None


# --- restart -----------------------------------------------------------------------------------------

def test_reload_completes_prepared_transactions():
    core, clock, store, markers, _ = make_core()
    pid, e = init(core)
    core.add_partitions("tx", pid, e, [TP0, TP1], client_tv=2)
    core.end_txn("tx", pid, e, True, client_tv=2)
    pid2, e2 = init(core, "other")
    # crash before the markers: a new coordinator replays the log
    core2, clock2, store2, markers2, _ = make_core()
    pending = core2.load(store.last_values())
    assert pending == ["tx"]
    md = core2.txns["tx"]
    assert md.state == S.PREPARE_COMMIT and md.partitions == {TP0, TP1} and md.producer_epoch == e + 1
    assert write_markers(core2, markers2, "tx")
    assert markers2.calls == [(pid, e + 1, True, [TP0, TP1])]
    assert md.state == S.COMPLETE_COMMIT
    assert core2.txns["other"].producer_id == pid2
    # producer ids are never reused after a reload
    assert core2.init_producer_id(None, 0)[1] > max(pid, pid2)


def test_list_and_describe():
    core, clock, *_ = make_core()
    p1, e1 = init(core, "a")
    init(core, "b")
    core.add_partitions("a", p1, e1, [TP0])
    clock.t += 10_000
    assert core.describe("nope")[0] == E.transactional_id_not_found
    err, md = core.describe("a")
    assert err == E.none and md.state == S.ONGOING and md.partitions == {TP0}
    def names(r):
        return sorted(m.transactional_id for m in r[0])

    assert names(core.list()) == ["a", "b"]
    assert names(core.list(["Ongoing"])) == ["a"]
    assert names(core.list(producer_ids=[p1])) == ["a"]
    assert core.list(["Bogus"]) == ([], ["Bogus"])
    assert names(core.list(duration_ms=20_000)) == ["b"]  # Empty has no start time: always "long"
    assert names(core.list(duration_ms=5_000)) == ["a", "b"]
    import re
    assert names(core.list(pattern=re.compile("a"))) == ["a"]


# --- record format -----------------------------------------------------------------------------------

def test_log_value_round_trip_v0_and_v1():
    v = TxnLogValue(7, 3, 60000, int(S.ONGOING), {("a", 0), ("a", 2), ("b", 1)}, 123, 100, 5, -1, 2)
    for version in (0, 1):
        back = decode_value(encode_value(v, version))
        assert (back.producer_id, back.producer_epoch, back.timeout_ms, back.state, back.partitions,
                back.last_update_ms, back.start_ms) == (7, 3, 60000, 1, v.partitions, 123, 100)
        if version == 1:
            assert (back.prev_producer_id, back.next_producer_id, back.client_tv) == (5, -1, 2)
    assert decode_key(encode_key("héllo")) == "héllo"
    empty = decode_value(encode_value(TxnLogValue(1, 0, 1000, int(S.EMPTY), set(), 1, -1)))
    assert empty.partitions == set()


def test_log_value_matches_kafka_bytes():
    # TransactionLogValue v1 for pid 1, epoch 0, timeout 60000, Empty, no partitions, times 0/-1:
    # version, int64, int16, int32, int8, compact null array (0), int64, int64, no tags
    raw = encode_value(TxnLogValue(1, 0, 60000, 0, set(), 0, -1))
    assert raw == bytes.fromhex("0001" "0000000000000001" "0000" "0000ea60" "00" "00"
                                "0000000000000000" "ffffffffffffffff" "00")
    assert encode_key("ab") == bytes.fromhex("0000" "0002") + b"ab"


def test_partition_for_uses_java_hash():
    # "txn".hashCode() == 115306 in Java
    assert partition_for("txn", 50) == 115306 % 50
    assert partition_for("anything", 1) == 0
