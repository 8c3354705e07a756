"""The short mode of the queue workload: one seeded run of four client processes (two with
kafka-clients, two with confluent-kafka) against a broker of the suite's kind (kafkalite, or
Apache Kafka with --broker=kafka) that is killed (-9, then restarted from its files) and paused
(SIGSTOP/SIGCONT) while they run; the history must show none of the checker's anomalies.

``JEPSEN_SEED`` chooses another seed; the long mode is ``python -m compat_tests.jepsen``.
"""

from __future__ import annotations

import os

import pytest

from compat_tests.jepsen.runner import BROKER_CONFIG, RunConfig, run

pytestmark = [pytest.mark.jepsen, pytest.mark.restart, pytest.mark.java, pytest.mark.librdkafka]

SEED = int(os.environ.get("JEPSEN_SEED", "17"))


@pytest.mark.timeout(240)
def test_random_transactions_under_kills_and_pauses(start_broker, tmp_path):
    broker = start_broker(config=BROKER_CONFIG)
    r = run(broker, RunConfig(seed=SEED, seconds=20.0), tmp_path)
    print(r.report())
    assert r.result.valid, r.report()
    assert not r.errors, r.report()
    # The run exercised what it is meant to: both faults, both clients, every kind of operation.
    kinds = {f.split("@")[0] for f in r.faults}
    assert kinds == {"kill", "pause"}, r.faults
    done = [op for op in r.history if op["type"] in ("ok", "fail", "info") and op["process"] not in ("nemesis", "final")]
    ok_txns = [op for op in done if op["f"] == "txn" and op["type"] == "ok"]
    assert {op["client"] for op in ok_txns} == {"java", "rdkafka"}
    assert any(op.get("abort") for op in ok_txns) and any(op.get("commit_offsets") for op in ok_txns)
    assert {op["f"] for op in done if op["type"] == "ok"} >= {"txn", "poll", "assign", "subscribe"}
    assert {op["isolation"] for op in ok_txns} == {"read_committed", "read_uncommitted"}
    assert r.result.stats["acknowledged_writes"] >= 50, r.result.stats
    final = [op for op in r.history if op["process"] == "final" and op["type"] == "ok"]
    assert len(final) == 1
