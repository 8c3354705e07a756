"""Fixtures of the tools part: one broker for the package, with the authorizer on (allow where no
ACL is set, as a cluster an operator runs kafka-acls against), started by compat_tests.brokers
so that ``COMPAT_BROKER=kafka`` runs the same cases on Apache Kafka 4.4."""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import contextmanager
from typing import Iterator

import pytest

from compat_tests import brokers, tools
from compat_tests.authorizer import secured_config


@pytest.fixture(scope="package")
def tools_broker(tmp_path_factory):
    brokers.requires_own_broker("the tools part's broker with an authorizer")
    with brokers.start(tmp_path_factory.mktemp("tools-broker"), secured_config(brokers.on_kafka())) as b:
        yield b
    tools.stop()


@pytest.fixture(scope="package")
def bs(tools_broker) -> str:
    return tools_broker.bootstrap


@pytest.fixture
def kt(bs):
    """kt(tool, *args, **run_args): the tool with ``--bootstrap-server`` set to the broker."""

    def run(tool: str, *args: str, **kw) -> tools.ToolResult:
        return tools.run(tool, "--bootstrap-server", bs, *args, **kw)

    return run


@pytest.fixture
def topic(request) -> str:
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60]
    return f"t-{base}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def group() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


@contextmanager
def active_consumer(bootstrap: str, group_id: str, topic_name: str, protocol: str = "classic",
                    **config: str) -> Iterator[dict]:
    """A librdkafka consumer of `group_id` that polls in a thread while the block runs (an active
    member for the tools to describe); yields its state (``assignment``) once it has partitions."""
    from confluent_kafka import Consumer

    conf = {"bootstrap.servers": bootstrap, "group.id": group_id, "auto.offset.reset": "earliest",
            "enable.auto.commit": "false", "client.id": "tools-member", "group.protocol": protocol, **config}
    if protocol == "classic":
        conf.setdefault("session.timeout.ms", "10000")
    consumer = Consumer(conf)
    state: dict = {"assignment": [], "error": None}
    stop = threading.Event()
    consumer.subscribe([topic_name])

    def poll() -> None:
        while not stop.is_set():
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is not None:
                state["error"] = msg.error()
            state["assignment"] = consumer.assignment()

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not state["assignment"]:
            assert time.monotonic() < deadline, f"no assignment in 30 s (last error {state['error']})"
            time.sleep(0.05)
        yield state
    finally:
        stop.set()
        thread.join(10)
        consumer.close()


@contextmanager
def open_transaction(bootstrap: str, topic_name: str, values: list[str], partition: int = 0) -> Iterator[str]:
    """A librdkafka transactional producer with `values` written to `topic_name` in a transaction
    left open while the block runs (aborted after); yields its transactional id."""
    from confluent_kafka import Producer

    txn_id = f"tools-txn-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": "120000"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for v in values:
        producer.produce(topic_name, value=v.encode(), partition=partition)
    producer.flush(30)
    try:
        yield txn_id
    finally:
        try:
            producer.abort_transaction(30)
        except Exception:  # noqa: BLE001 - an abort the tool already wrote may leave nothing to abort
            pass
