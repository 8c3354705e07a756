"""Shared fixtures of the compatibility suite.

The suite runs against a broker it starts itself: kafkalite by default, Apache Kafka with
``--broker=kafka`` or ``COMPAT_BROKER=kafka`` (compat_tests/brokers.py). Or against any
Kafka-compatible broker named by ``KAFKA_BOOTSTRAP`` (then tests that must restart the broker
are skipped, because the suite cannot restart a broker it did not start).
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

if str(Path(__file__).resolve().parent.parent) not in sys.path:  # `pytest` run without `python -m`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compat_tests.clients import ADAPTERS, load_adapter  # noqa: E402
from compat_tests.clients.base import Unsupported, documented_limit  # noqa: E402
from compat_tests import brokers  # noqa: E402
from compat_tests.brokers import EXTERNAL_BOOTSTRAP  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--broker", choices=brokers.KINDS, default=None,
                     help="the broker the compat suite starts: kafkalite (default) or kafka (Apache Kafka); "
                          "same as COMPAT_BROKER")


def pytest_configure(config):
    chosen = config.getoption("--broker", default=None)
    if chosen:
        os.environ["COMPAT_BROKER"] = chosen  # also seen by helper processes the tests start
    brokers.kind()  # a bad COMPAT_BROKER is a usage error before any test runs


def pytest_report_header(config):
    return f"compat broker: {EXTERNAL_BOOTSTRAP or brokers.kind()}"


@pytest.fixture(scope="session")
def broker():
    """The session's broker (kafkalite or Apache Kafka), or None when the suite runs against
    KAFKA_BOOTSTRAP."""
    if EXTERNAL_BOOTSTRAP:
        yield None
        return
    with brokers.start() as b:
        yield b


@pytest.fixture(scope="session")
def bootstrap(broker) -> str:
    return EXTERNAL_BOOTSTRAP or broker.bootstrap


@pytest.fixture
def start_broker(tmp_path):
    """start_broker(config=None, data_dir=None, **kw): a broker of the suite's kind of this
    test's own (kill(), stop(), restart() on the same data dir and port), closed after the test;
    ``kw`` goes to brokers.start (``listeners``, ``advertised``)."""
    brokers.requires_own_broker("brokers of a test's own")
    started = []

    def start(config=None, data_dir=None, **kw):
        b = brokers.start(data_dir or tmp_path / f"data-{len(started)}", config, **kw)
        started.append(b)
        return b

    yield start
    for b in started:
        b.close()


@pytest.fixture
def own_broker(start_broker):
    """A broker of this test's own, on a data dir the test keeps (for kill/restart tests)."""
    return start_broker()


@pytest.fixture
def topic_name(request) -> str:
    """A fresh topic name per test."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:80]
    return f"t-{base}-{uuid.uuid4().hex[:8]}"


# ---- clients ----


@pytest.fixture(params=[pytest.param(name, marks=getattr(pytest.mark, name), id=name) for name in ADAPTERS])
def client(request, bootstrap):
    """Each registered client adapter in turn (compat_tests/clients/__init__.py: ADAPTERS).

    Marked with the adapter's name, so ``-m java`` selects one client. An adapter whose module is
    missing makes its tests error, not skip.
    """
    adapter = load_adapter(request.param)(bootstrap)
    yield adapter
    close = getattr(adapter, "close", None)
    if close is not None:
        close()


def _limit_or_failure(e: Unsupported):
    """A documented client limit (compat_tests/clients/base.py: CLIENT_LIMITS) is a skip with its
    reason; any other Unsupported is a failure."""
    reason = documented_limit(e)
    if reason is None:
        pytest.fail(f"Unsupported that is not a documented client limit (CLIENT_LIMITS): {e}", pytrace=False)
    pytest.skip(f"unsupported by the client: {e} ({reason})")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    try:
        return (yield)
    except Unsupported as e:
        _limit_or_failure(e)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    except Unsupported as e:
        _limit_or_failure(e)


@pytest.fixture(scope="session")
def admin_client(bootstrap):
    """The reference client for test set-up: confluent-kafka (librdkafka), in-process and fast."""
    from compat_tests.clients.librdkafka import LibrdkafkaClient

    return LibrdkafkaClient(bootstrap)


@pytest.fixture
def create_topic(admin_client):
    """create_topic(name, partitions=1, configs=None): an explicit CreateTopics through librdkafka."""

    def create(name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> str:
        admin_client.create_topic(name, partitions, configs)
        return name

    return create
