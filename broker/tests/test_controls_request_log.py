"""The request log: what a real confluent-kafka client sent, with its client id and software name,
the key fields (topics and partitions, transactional id, group id, producer id and epoch), the
filters, and the reset emptying it; the log is on from the broker's start."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalite.controls import ControlFailed


@pytest.fixture(scope="module")
def broker(controls_broker):
    return controls_broker


@pytest.fixture
def controls(broker):
    broker.controls.reset()
    yield broker.controls


def test_on_from_the_start_and_off_when_asked(broker):
    assert broker.controls.requests(api="ApiVersions") is not None  # no record-requests needed
    assert broker.controls.record_requests()["limit"] == 10_000  # request.log.size's default
    broker.controls.record_requests(enabled=False)
    try:
        with pytest.raises(ControlFailed, match="record-requests"):
            broker.controls.requests()
    finally:
        broker.controls.record_requests()


def test_idempotent_producer_requests_with_client_id(broker, controls):
    topic = f"log-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "order-writer",
                         "enable.idempotence": True})
    for i in range(3):
        producer.produce(topic, value=b"v%d" % i, partition=0)
    assert producer.flush(10) == 0

    log = controls.requests(client_id="order-writer")
    assert log.of("ApiVersions")
    # one InitProducerId, or more when librdkafka resent one whose answer was slow (a loaded machine)
    inits = log.of("InitProducerId")
    assert inits
    for init in inits:
        assert init["client_id"] == "order-writer" and init.get("transactional_id") is None
        assert init["client_software"]["name"] == "confluent-kafka-python"
    produces = log.of("Produce")
    assert produces and all(e["topics"] == {topic: [0]} for e in produces)
    # idempotent: every batch carries the producer id InitProducerId handed out, epoch 0
    assert {(e["producer_id"] >= 0, e["producer_epoch"], e["acks"]) for e in produces} == {(True, 0, -1)}
    assert log.of("Produce").where(topic=topic) and not log.of("Produce").where(topic="other")
    assert log.apis().index("InitProducerId") < log.apis().index("Produce")
    # the broker-side filter gives the same entries
    assert [e["seq"] for e in controls.requests(api="Produce", topic=topic)] == [e["seq"] for e in produces]
    assert controls.requests(client_id="someone-else") == []


def test_transactional_and_group_fields(broker, controls):
    topic = f"txlog-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "txn-writer",
                         "transactional.id": f"tx-{topic}"})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(topic, value=b"x", partition=0)
    producer.commit_transaction(10)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}", "client.id": "reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    # joined and assigned: librdkafka's own thread does that without a poll, and the broker says when
    broker.wait_for_group(f"g-{topic}", members=1)
    for offset in (1, 2):  # two commits: the log counts them
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    consumer.close()

    txn = controls.requests(transactional_id=f"tx-{topic}")
    assert {"InitProducerId", "EndTxn"} <= set(txn.apis())
    (end,) = txn.of("EndTxn")
    assert end["producer_id"] >= 0 and end["client_id"] == "txn-writer"
    assert all(e["transactional"] for e in controls.requests(api="Produce", client_id="txn-writer"))
    commits = controls.requests(api="OffsetCommit", group_id=f"g-{topic}")
    assert len(commits) == 2 and commits[0]["topics"] == {topic: [0]}
    assert controls.requests(api="JoinGroup", group_id=f"g-{topic}")

    controls.reset()
    assert controls.requests(api="Produce") == []


def test_bad_filter_is_refused(controls):
    with pytest.raises(ControlFailed, match="no Kafka API"):
        controls.requests(api="NoSuchApi")
