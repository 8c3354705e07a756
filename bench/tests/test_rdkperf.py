"""bench/rdkperf works for real: built from its source, it produces idempotently and
transactionally and reads every record back, on the broker the suite runs on (kafkalite, or Apache
Kafka with COMPAT_BROKER=kafka)."""

from __future__ import annotations

import uuid

import pytest

from bench import peers, rdkperf
from compat_tests import brokers

RECORDS = 2000      # per producer
PRODUCERS = 2
SIZE = 512
TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def bootstrap():
    broker = brokers.start()
    try:
        yield broker.bootstrap
    finally:
        broker.close()


def _topic(bootstrap: str, partitions: int) -> str:
    topic = f"rdkperf-{uuid.uuid4().hex[:8]}"
    peers.create_topic(bootstrap, topic, partitions=partitions)
    return topic


def _produce_then_consume(bootstrap: str, topic: str, transactional_id: str | None) -> tuple[dict, dict]:
    produced = rdkperf.run(rdkperf.produce_cmd(bootstrap, topic, RECORDS, SIZE, PRODUCERS,
                                               transactional_id=transactional_id, commit_ms=20,
                                               timeout_s=TIMEOUT_S), TIMEOUT_S + 10)
    consumed = rdkperf.run(rdkperf.consume_cmd(bootstrap, topic, RECORDS * PRODUCERS, TIMEOUT_S,
                                               isolation_level="read_committed"), TIMEOUT_S + 10)
    return produced, consumed


def _check(produced: dict, consumed: dict) -> None:
    total = RECORDS * PRODUCERS
    assert produced["mode"] == "produce" and produced["producers"] == PRODUCERS
    assert produced["records"] == total and produced["bytes"] == total * SIZE
    assert produced["seconds"] > 0 and produced["mb_per_s"] > 0 and produced["cpu_s"] > 0
    assert 0 < produced["p50_ms"] <= produced["p99_ms"]
    assert consumed["mode"] == "consume"
    assert consumed["records"] == total and consumed["bytes"] == total * SIZE
    assert consumed["seconds"] > 0 and consumed["mb_per_s"] > 0


@pytest.mark.idempotence
def test_idempotent_produce_then_consume(bootstrap):
    topic = _topic(bootstrap, partitions=3)
    produced, consumed = _produce_then_consume(bootstrap, topic, None)
    assert produced["transactional"] is False
    _check(produced, consumed)


@pytest.mark.transactions
def test_transactional_produce_then_read_committed(bootstrap):
    topic = _topic(bootstrap, partitions=3)
    produced, consumed = _produce_then_consume(bootstrap, topic, f"rdkperf-test-{uuid.uuid4().hex[:8]}")
    assert produced["transactional"] is True
    _check(produced, consumed)


def test_failure_is_an_error_not_a_figure(bootstrap):
    """A topic that does not exist: rdkperf exits non-zero with the reason, prints no figures."""
    with pytest.raises(RuntimeError, match="rdkperf exit 1: .*"):
        rdkperf.run(rdkperf.consume_cmd(bootstrap, f"missing-{uuid.uuid4().hex[:8]}", 10, 5.0), 30)
