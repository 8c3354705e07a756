"""A kafkalite broker with its schema registry for the registry's client tests. Apache Kafka has no
schema registry, so these tests run on kafkalite whatever COMPAT_BROKER says."""

from __future__ import annotations

import pytest

from kafkalite.tests import suite_brokers


@pytest.fixture(scope="module")
def registry_broker():
    with suite_brokers.running(schema_registry=0) as broker:
        yield broker
