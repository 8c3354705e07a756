"""Shared fixtures of the compatibility suite.

The suite runs against a kafkalite broker it starts itself, or against any Kafka-compatible
broker named by ``KAFKA_BOOTSTRAP`` (then tests that must restart the broker are skipped,
because the suite cannot restart a broker it did not start).
"""

from __future__ import annotations

import os
import uuid

import pytest

import kafkalite

EXTERNAL_BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP")


@pytest.fixture(scope="session")
def broker():
    """The kafkalite broker process, or None when the suite runs against KAFKA_BOOTSTRAP."""
    if EXTERNAL_BOOTSTRAP:
        yield None
        return
    with kafkalite.running() as b:
        yield b


@pytest.fixture(scope="session")
def bootstrap(broker) -> str:
    return EXTERNAL_BOOTSTRAP or broker.bootstrap


@pytest.fixture
def own_broker(tmp_path):
    """A broker of this test's own, on a data dir the test keeps (for kill/restart tests)."""
    if EXTERNAL_BOOTSTRAP:
        pytest.skip("restarts need a broker the suite starts itself (KAFKA_BOOTSTRAP is set)")
    b = kafkalite.start(data_dir=tmp_path / "data")
    yield b
    b.stop()


@pytest.fixture
def topic_name(request) -> str:
    """A fresh topic name per test."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:80]
    return f"t-{base}-{uuid.uuid4().hex[:8]}"
