"""Both brokers of the differ, started once per run with the same settings: Apache Kafka
(compat_tests.reference, jars from `maven_jars kafka-broker`) and kafkalite, or the broker
named by KAFKA_BOOTSTRAP in kafkalite's place.

They are package fixtures, not session ones: the files that use them run together on one
worker (kafkalite/tests/shared_sessions.py), usually early in the pass, and an idle Apache Kafka
costs about 2.5 CPU-seconds a minute; as session fixtures they idled on until the worker's last
file, through most of the pass."""

from __future__ import annotations

import os

import pytest

from compat_tests.brokers import SUITE_CONFIG
from kafkalite.tests import suite_brokers

# Settings both brokers run with, so that timing-driven answers can be compared: the timed-out
# transaction scan runs every second instead of every ten, and the internal topics have one
# partition (Kafka's 50 would only slow its first coordinator lookup). Over the suite's own
# settings (brokers.SUITE_CONFIG: retention checked once a day, since the conversations' records carry
# fixed 1970 timestamps, conversations.TS, that a retention check would delete between a Produce
# and a Fetch).
SHARED_CONFIG = {
    **SUITE_CONFIG,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}


@pytest.fixture(scope="package")
def reference_bootstrap():
    """Apache Kafka. A missing jar set is an error here, never a skip."""
    from compat_tests.reference import ReferenceBroker

    with ReferenceBroker(config=SHARED_CONFIG) as kafka:
        yield kafka.start(timeout=120)


@pytest.fixture(scope="package")
def subject_bootstrap():
    """kafkalite (or KAFKA_BOOTSTRAP: any broker to hold against Apache Kafka)."""
    external = os.environ.get("KAFKA_BOOTSTRAP")
    if external:
        yield external
        return
    with suite_brokers.running(config=SHARED_CONFIG) as b:
        yield b.bootstrap
