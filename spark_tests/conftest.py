"""Spark's Kafka connector against the broker under test.

Two kinds of tests:

* test_connector_calls.py — always runs: a Java program (java/SparkConnectorCalls.java) makes the
  Kafka client calls the connector makes, with the configs it sets, and every answer is checked.
* test_pyspark_kafka.py — PySpark (local[2]) with the connector itself; needs the connector's jars
  (SPARK_KAFKA_JARS or SPARK_KAFKA_PACKAGES, see there) and skips without them.

The broker is the kafkalite pytest plugin's (``kafka_bootstrap``): kafkalite started for the
session, or the broker named by KAFKA_BOOTSTRAP / --kafka-bootstrap; with ``COMPAT_BROKER=kafka``
(``--broker=kafka``, compat_tests/brokers.py) Apache Kafka started for the session instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:  # compat_tests is imported from the checkout
    sys.path.insert(0, str(_ROOT))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: Spark's Kafka connector, or the Kafka client calls it makes")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def kafka_bootstrap(pytestconfig: pytest.Config, request: pytest.FixtureRequest) -> str:
    """The plugin's broker, or Apache Kafka when the suite runs on it."""
    from compat_tests import brokers
    from kafkalite.pytest_plugin import external_bootstrap

    external = external_bootstrap(pytestconfig)
    if external:
        return external
    if not brokers.on_kafka():
        return request.getfixturevalue("kafkalite_broker").bootstrap
    kafka = brokers.start()
    request.addfinalizer(kafka.close)
    return kafka.bootstrap


@pytest.fixture
def bootstrap(kafka_bootstrap: str) -> str:
    return kafka_bootstrap


@pytest.fixture
def topic(kafka_topic_factory):
    """topic(partitions=1, configs=None) -> name of a fresh topic (deleted after the test)."""
    return lambda partitions=1, configs=None, name=None: kafka_topic_factory(partitions, configs, name)
