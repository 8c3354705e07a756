"""Exactly-once under failure: a transactional copier (consume, transform, produce, send
offsets with the group metadata, commit) copies the input while it is SIGKILLed and restarted
at random moments, and, separately, while the broker is SIGKILLed and restarted; a
read_committed reader then finds every input record exactly once, in input order, per
partition. Also the group-mode variant of Kafka's system test: three librdkafka copiers, each
with its own transactional.id, in one consumer group over a 6-partition input (KIP-447:
sendOffsetsToTransaction carries the consumer's group metadata, so a copier left behind by a
rebalance is fenced by the generation); one of them, chosen at random, is SIGKILLed and
restarted, so rebalances happen mid-transaction. Also: the broker killed between
PrepareCommit and the markers, and between two markers, completes the transaction on restart.
Every kill waits until the copy has reached 20 % progress (input offsets committed by the
group), as in Kafka's test.

Sizes: EOS_RECORDS input records (default 30000, spread over 3 partitions; the group-mode
test uses 2 * EOS_RECORDS unless EOS_RECORDS is set), EOS_KILLS copier kills (default 5;
group mode: min(EOS_KILLS, 3) unless EOS_KILLS is set), EOS_BROKER_KILLS broker kills
(default 3), EOS_BATCH records per transaction at most (default 20); EOS_SEED fixes the random
moments. The full size (100 000 records, transactions of 750, 3 kills):

    EOS_RECORDS=100000 EOS_BATCH=750 EOS_KILLS=3 python -m pytest compat_tests/test_exactly_once.py
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from compat_tests import brokers
from compat_tests.txn import rdkafka_txn as reader
from compat_tests.waiting import wait_until

pytestmark = [pytest.mark.exactly_once, pytest.mark.transactions]

RECORDS = int(os.environ.get("EOS_RECORDS", "30000"))
KILLS = int(os.environ.get("EOS_KILLS", "5"))
BROKER_KILLS = int(os.environ.get("EOS_BROKER_KILLS", "3"))
BATCH = int(os.environ.get("EOS_BATCH", "20"))  # records per transaction, at most
SEED = int(os.environ.get("EOS_SEED", str(random.randrange(1 << 30))))
PARTITIONS = 3
GROUP_PARTITIONS = 6
GROUP_COPIERS = 3
GROUP_RECORDS = int(os.environ.get("EOS_RECORDS", str(RECORDS * 2)))
GROUP_KILLS = int(os.environ.get("EOS_KILLS", str(min(KILLS, 3))))
MIN_PROGRESS = 0.2  # no kill before the copy has reached this fraction of the input
# The copiers' consumers ask for a 3 s session (a killed copier's partitions move on quickly);
# Kafka refuses a session below group.min.session.timeout.ms, 6 s by default.
BROKER_CONFIG = {"group.min.session.timeout.ms": 1000}
REPO = Path(__file__).resolve().parent.parent


def _external():
    brokers.requires_own_broker("kills and restarts")


def _fill_input(bootstrap: str, topic: str, partitions: int = PARTITIONS, records: int = RECORDS
                ) -> dict[int, list[str]]:
    from confluent_kafka import Producer
    _create(bootstrap, topic, partitions)
    p = Producer({"bootstrap.servers": bootstrap, "broker.address.family": "v4", "enable.idempotence": True,
                  "linger.ms": 10})
    expected: dict[int, list[str]] = {i: [] for i in range(partitions)}
    for i in range(records):
        part = i % partitions
        value = f"r{i:07d}"
        p.produce(topic, value=value.encode(), partition=part)
        expected[part].append("copied:" + value)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    return expected


def _create(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap, "broker.address.family": "v4"})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def _pipeline(bootstrap: str, partitions: int = PARTITIONS, records: int = RECORDS):
    """A filled input topic, an empty sink and a group name: (source, sink, group, suffix,
    expected output per partition, input end offsets)."""
    suffix = uuid.uuid4().hex[:6]
    source, sink, group = f"eos-in-{suffix}", f"eos-out-{suffix}", f"eos-g-{suffix}"
    expected = _fill_input(bootstrap, source, partitions, records)
    _create(bootstrap, sink, partitions)
    ends = reader.end_offsets(bootstrap, source, list(range(partitions)), "read_uncommitted")
    return source, sink, group, suffix, expected, [ends[p] for p in range(partitions)]


class Copier:
    """The copier process (librdkafka, Java or franz-go), restarted whenever it is not running."""

    def __init__(self, client: str, bootstrap: str, tid: str, group: str, source: str, sink: str, log: Path):
        self.client, self.bootstrap, self.tid, self.group = client, bootstrap, tid, group
        self.source, self.sink = source, sink
        self.log_path = log
        self.log = open(log, "ab")
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def commits(self) -> int:
        """Transactions committed so far, by every incarnation (from the copiers' output)."""
        self.log.flush()
        text = self.log_path.read_bytes()
        return text.count(b"committed ") + text.count(b'{"progress":')

    def ensure_running(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        self.starts += 1
        if self.client == "librdkafka":
            cmd = [sys.executable, "-m", "compat_tests.txn.copier", self.bootstrap, self.tid, self.group,
                   self.source, self.sink, str(BATCH)]
            self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        elif self.client == "franz":
            from compat_tests.clients import golang
            req = {"cmd": "copy", "bootstrap": self.bootstrap, "transactional_id": self.tid, "group": self.group,
                   "source": self.source, "sink": self.sink, "count": 1 << 62, "timeoutMs": 600_000,
                   "batch": BATCH, "session_timeout_ms": 3000, "progress": True}
            self.proc = subprocess.Popen([str(golang.build()), "franz"], cwd=REPO, stdout=self.log, stderr=self.log,
                                         stdin=subprocess.PIPE)
            self.proc.stdin.write(json.dumps(req).encode())
            self.proc.stdin.close()
        else:
            from compat_tests.txn import java_txn
            cmd = java_txn.command(self.bootstrap, "copy")
            req = java_txn.request(self.bootstrap, "copy", {"session.timeout.ms": 3000, "heartbeat.interval.ms": 500,
                                                           "transaction.timeout.ms": 10000},
                                   transactional_id=self.tid, group=self.group, source=self.source, sink=self.sink,
                                   count=1 << 62, timeout_ms=600_000, batch=BATCH)
            self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self.log, stderr=self.log, stdin=subprocess.PIPE)
            self.proc.stdin.write(req)
            self.proc.stdin.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def close(self) -> None:
        self.kill()
        self.log.close()


_OBSERVERS: dict = {}


@pytest.fixture(autouse=True)
def _close_observers():
    """The offset observers go with the test's broker (else librdkafka keeps reconnecting)."""
    yield
    while _OBSERVERS:
        _OBSERVERS.popitem()[1].close()


def _committed(bootstrap: str, group: str, topic: str, partitions: int = PARTITIONS, stable: bool = True
               ) -> list[int]:
    """The group's committed offsets (one long-lived consumer per group, never joining it).
    stable: OffsetFetch with require_stable (librdkafka's read_committed), which waits while
    transactional offsets are pending; without it, the last committed offsets at once."""
    from confluent_kafka import Consumer, TopicPartition
    c = _OBSERVERS.get((bootstrap, group, stable))
    if c is None:
        c = _OBSERVERS[(bootstrap, group, stable)] = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "broker.address.family": "v4",
             "isolation.level": "read_committed" if stable else "read_uncommitted"})
    tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=5)
    return [tp.offset for tp in tps]


def _progress(bootstrap: str, group: str, source: str, ends: list[int]) -> float:
    """The fraction of the input the group has committed (0 while the broker is unreachable)."""
    try:
        done = _committed(bootstrap, group, source, len(ends), stable=False)
    except Exception:
        return 0.0
    return sum(max(0, o) for o in done) / max(1, sum(ends))


def _wait_copied(bootstrap, group, source, ends, copiers, deadline, on_tick=None) -> None:
    copiers = copiers if isinstance(copiers, list) else [copiers]
    while time.monotonic() < deadline:
        for copier in copiers:
            copier.ensure_running()
        try:
            if _committed(bootstrap, group, source, len(ends)) == ends:
                return
        except Exception:
            pass  # the broker may be restarting
        if on_tick is not None:
            on_tick()
        time.sleep(0.3)
    raise AssertionError(f"EOS_SEED={SEED}: the copiers did not finish in time (committed "
                         f"{_committed(bootstrap, group, source, len(ends))} of {ends}, "
                         f"{[c.starts for c in copiers]} starts)")


def _check_exactly_once(bootstrap: str, sink: str, expected: dict[int, list[str]]) -> None:
    got = reader.values(reader.read(bootstrap, sink, list(expected), "read_committed", timeout_s=120))
    for p in expected:
        if got[p] != expected[p]:
            seen = set()
            dups = [v for v in got[p] if v in seen or seen.add(v)]
            missing = sorted(set(expected[p]) - set(got[p]))
            raise AssertionError(f"EOS_SEED={SEED} partition {p}: {len(got[p])} records for {len(expected[p])} inputs; "
                                 f"duplicates {dups[:5]}, missing {missing[:5]}, first difference at "
                                 f"{next(i for i, (a, b) in enumerate(zip(got[p] + [None], expected[p] + [None])) if a != b)}")


def _copy_with_kills(copiers, rnd, kill, total_txns: int, kills: int, progress) -> int:
    """Runs the copiers and calls kill() `kills` times, each once progress() (the fraction of
    the input committed) is at least MIN_PROGRESS and after a random number of transactions has
    committed since the previous kill, plus 0-20 ms (so kills land inside transactions, between
    the produce and the commit, right after a commit, ...). Returns the number of kills done
    while the copy was still running (new commits just seen)."""
    copiers = copiers if isinstance(copiers, list) else [copiers]

    def commits():
        return sum(c.commits() for c in copiers)

    def run_until(done, timeout_s=120) -> bool:
        deadline = time.monotonic() + timeout_s
        checked = time.monotonic()
        while time.monotonic() < deadline:
            for c in copiers:
                c.ensure_running()
            if done():
                return True
            if time.monotonic() - checked > 1.0:
                checked = time.monotonic()
                if progress() >= 1.0:
                    return False  # the copy is over
            time.sleep(0.005)
        return False

    per_kill = max(2, int(total_txns * (1 - MIN_PROGRESS)) // (kills + 1))
    mid = 0
    for _ in range(kills):
        reached = [False]

        def at_min_progress(reached=reached):  # committed offsets, polled at most every 50 ms
            if not reached[0] and time.monotonic() - at_min_progress.last >= 0.05:
                at_min_progress.last = time.monotonic()
                reached[0] = progress() >= MIN_PROGRESS
            return reached[0]
        at_min_progress.last = 0.0
        if not run_until(at_min_progress):
            break
        target = commits() + rnd.randint(1, per_kill)
        if not run_until(lambda target=target: commits() >= target):
            break  # the copy is over
        time.sleep(rnd.uniform(0, 0.02))
        if progress() >= 1.0:
            break
        mid += 1
        kill()
    return mid


def _copy_exactly_once_through_kills(client: str, bs: str, tmp_path, rnd: random.Random, kills: int,
                                     kill: Callable[[Copier], None]) -> None:
    """A fresh pipeline copied by `client`'s copier while `kill(copier)` strikes `kills` times
    (at least two of them while the copy runs); the sink then holds every record exactly once."""
    source, sink, group, suffix, expected, ends = _pipeline(bs)
    copier = Copier(client, bs, f"eos-copier-{suffix}", group, source, sink, tmp_path / "copier.log")
    try:
        mid = _copy_with_kills(copier, rnd, lambda: kill(copier), RECORDS // BATCH, kills,
                               lambda: _progress(bs, group, source, ends))
        _wait_copied(bs, group, source, ends, copier, time.monotonic() + 240)
    finally:
        copier.close()
    assert mid >= min(kills, 2), f"only {mid} kills happened while the copy was running"
    _check_exactly_once(bs, sink, expected)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("client", [pytest.param("librdkafka", marks=pytest.mark.librdkafka),
                                    pytest.param("java", marks=pytest.mark.java),
                                    pytest.param("franz", marks=pytest.mark.franz)])
def test_copier_killed_and_restarted(client, tmp_path):
    _external()
    rnd = random.Random(SEED)
    with brokers.start(tmp_path / "data", BROKER_CONFIG) as b:
        bs = b.bootstrap
        _copy_exactly_once_through_kills(client, bs, tmp_path, rnd, KILLS, lambda copier: copier.kill())


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.restart
def test_broker_killed_and_restarted_under_a_copier(tmp_path):
    _external()
    rnd = random.Random(SEED + 1)
    broker = brokers.start(tmp_path / "data", BROKER_CONFIG)
    bs = broker.bootstrap

    def kill_broker():
        broker.kill()
        time.sleep(rnd.uniform(0, 1.0))
        broker.restart()

    try:
        _copy_exactly_once_through_kills("librdkafka", bs, tmp_path, rnd, BROKER_KILLS,
                                         lambda _copier: kill_broker())
    finally:
        broker.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.groups
@pytest.mark.librdkafka
def test_copiers_in_a_group_killed_and_restarted(tmp_path):
    """Three copiers in one group over 6 partitions, each with its own transactional.id; one
    of them, at random, is SIGKILLed and restarted at random moments past 20 % progress: its
    partitions move to the others once its session times out, and back when it rejoins, while
    transactions are open; the generation in sendOffsetsToTransaction fences a copier that a
    rebalance left behind, and a new owner's offset fetch waits for the pending offsets of the
    killed copier's transaction (KIP-447)."""
    _external()
    rnd = random.Random(SEED + 2)
    with brokers.start(tmp_path / "data", BROKER_CONFIG) as b:
        bs = b.bootstrap
        source, sink, group, suffix, expected, ends = _pipeline(bs, GROUP_PARTITIONS, GROUP_RECORDS)
        copiers = [Copier("librdkafka", bs, f"eos-copier-{suffix}-{i}", group, source, sink,
                          tmp_path / f"copier-{i}.log") for i in range(GROUP_COPIERS)]
        try:
            mid = _copy_with_kills(copiers, rnd, lambda: rnd.choice(copiers).kill(), GROUP_RECORDS // BATCH,
                                   GROUP_KILLS, lambda: _progress(bs, group, source, ends))
            _wait_copied(bs, group, source, ends, copiers, time.monotonic() + 240)
        finally:
            for c in copiers:
                c.close()
        assert mid >= min(GROUP_KILLS, 2), f"only {mid} kills happened while the copy was running"
        assert sum(c.starts for c in copiers) >= GROUP_COPIERS + mid
        _check_exactly_once(bs, sink, expected)


# --- the broker killed between PrepareCommit and the markers --------------------------------------

@pytest.mark.restart
@pytest.mark.parametrize("kill_after_markers", [0, 1])
@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_broker_killed_between_prepare_and_markers(tmp_path, commit, kill_after_markers):
    """The broker's marker channel is wired to wait before each marker (broker.tests.slow_markers)
    so that the broker can be killed after PrepareCommit/PrepareAbort is durable and before the markers
    (or after the first of two markers); on restart the coordinator completes the transaction."""
    _external()
    brokers.requires_kafkalite("the marker channel is slowed by wiring kafkalite differently (broker.tests.slow_markers)")
    from confluent_kafka import Producer
    delay_ms = 3000  # the window the kill must fall in; the test waits on conditions, not on it
    b = brokers.start(tmp_path / "data", BROKER_CONFIG, kafkalite_module="kafkalite.broker.tests.slow_markers",
                      kafkalite_args=("--marker-delay-ms", str(delay_ms)))
    try:
        bs = b.bootstrap
        topic = "crash-" + uuid.uuid4().hex[:6]
        _create(bs, topic)
        tid = "crash-" + uuid.uuid4().hex[:6]
        p = Producer({"bootstrap.servers": bs, "broker.address.family": "v4", "transactional.id": tid,
                      "linger.ms": 0})
        p.init_transactions(30)
        p.begin_transaction()
        for part in (0, 1):
            p.produce(topic, value=f"v{part}".encode(), partition=part)
        assert p.flush(10) == 0
        t0 = time.monotonic()
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
        assert time.monotonic() - t0 < delay_ms / 1000, "EndTxn must answer before the markers are written"
        # markers not written yet: both partitions are held at their first offset
        assert reader.end_offsets(bs, topic, [0, 1, 2], "read_committed") == {0: 0, 1: 0, 2: 0}
        if kill_after_markers:
            # partition 0's marker is in its log; partition 1's comes delay_ms later
            wait_until(lambda: reader.end_offsets(bs, topic, [0], "read_uncommitted")[0] == 2, timeout=30,
                       interval=0.02, what="the first marker")
        b.kill()
        # the channel logs each marker just before writing it: the kill fell where it had to
        begun = b.log_text().count(" marker of producer ")
        assert begun == kill_after_markers, f"killed after {begun} markers had begun, not {kill_after_markers}"
        b.restart()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rc = reader.end_offsets(bs, topic, [0, 1], "read_committed")
            ru = reader.end_offsets(bs, topic, [0, 1], "read_uncommitted")
            if rc == ru:
                break
            time.sleep(0.2)
        # data + marker in each partition; a partition whose marker was written before the
        # crash gets a second one (harmless: it closes nothing), as Kafka re-sends them too
        assert rc == ru and ru[1] == 2 and ru[0] == 2 + kill_after_markers
        got = reader.values(reader.read(bs, topic, [0, 1], "read_committed"))
        assert got == ({0: ["v0"], 1: ["v1"]} if commit else {0: [], 1: []})
        p2 = Producer({"bootstrap.servers": bs, "broker.address.family": "v4", "transactional.id": tid})
        p2.init_transactions(30)  # the coordinator is past the transaction: no CONCURRENT_TRANSACTIONS forever
    finally:
        b.close()
