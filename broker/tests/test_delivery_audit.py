"""The delivery-audit control: consumed input against produced output, matched by key, header or
a JSON path, over committed records and the group's committed offsets, gives the counts, the
examples and the verdict (exactly once, at least once, at most once, none)."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import kafkalite


@pytest.fixture(scope="module")
def broker(controls_broker):
    return controls_broker


def topic_with(broker, records: list[tuple[str | None, str, list[tuple[str, bytes]]]]) -> str:
    """A new topic holding `records` (key, value, headers) in partition 0, in order."""
    topic = f"audit-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for key, value, headers in records:
        p.produce(topic, value.encode(), key=None if key is None else key.encode(), partition=0, headers=headers)
    assert p.flush(30) == 0
    return topic


def keyed(keys: list[str]) -> list[tuple[str | None, str, list[tuple[str, bytes]]]]:
    return [(k, f"value of {k}", []) for k in keys]


def commit(broker, group: str, topic: str, offset: int) -> None:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()


KEYS = [f"k{i}" for i in range(10)]


def test_each_record_produced_once_is_exactly_once(broker):
    audit = broker.controls.delivery_audit(input_topic=topic_with(broker, keyed(KEYS)),
                                           output_topic=topic_with(broker, keyed(KEYS)))
    assert (audit["verdict"], audit["consumed"], audit["produced"], audit["lost"], audit["duplicated"]) == (
        "exactly once", 10, 10, 0, 0)


def test_a_record_produced_twice_is_at_least_once_with_its_copies(broker):
    output = topic_with(broker, keyed(KEYS[:4] + ["k3", "k3"] + KEYS[4:]))
    audit = broker.controls.delivery_audit(input_topic=topic_with(broker, keyed(KEYS)), output_topic=output)
    assert (audit["verdict"], audit["lost"], audit["duplicated"], audit["extra_copies"]) == ("at least once", 0, 1, 2)
    assert audit["duplicated_examples"] == [{"id": "k3", "partition": 0, "offset": 3, "copies": 3}]


def test_a_consumed_record_never_produced_is_at_most_once_and_both_is_none(broker):
    source = topic_with(broker, keyed(KEYS))
    audit = broker.controls.delivery_audit(input_topic=source, output_topic=topic_with(broker, keyed(KEYS[:5])),
                                           examples=2)
    assert (audit["verdict"], audit["lost"], audit["duplicated"]) == ("at most once", 5, 0)
    assert audit["lost_examples"] == [{"id": "k5", "partition": 0, "offset": 5},
                                      {"id": "k6", "partition": 0, "offset": 6}]
    both = broker.controls.delivery_audit(input_topic=source, output_topic=topic_with(broker, keyed(KEYS[:5] * 2)))
    assert (both["verdict"], both["lost"], both["duplicated"]) == ("none", 5, 5)


def test_with_a_group_only_the_input_below_its_committed_offset_was_consumed(broker):
    source = topic_with(broker, keyed(KEYS))
    output = topic_with(broker, keyed(KEYS[:7]))
    group = f"audit-{uuid.uuid4().hex[:6]}"
    commit(broker, group, source, 6)  # processed k0..k5; k6 produced ahead of its commit
    audit = broker.controls.delivery_audit(input_topic=source, output_topic=output, group=group)
    assert (audit["verdict"], audit["consumed"], audit["lost"], audit["ahead"]) == ("exactly once", 6, 0, 1)
    commit(broker, group, source, 10)
    audit = broker.controls.delivery_audit(input_topic=source, output_topic=output, group=group)
    assert (audit["verdict"], audit["consumed"], audit["lost"]) == ("at most once", 10, 3)


def test_records_match_by_a_header_or_a_json_path_and_those_without_are_unmatched(broker):
    source = topic_with(broker, [(None, json.dumps({"order": {"id": i}}), [("trace", f"t{i}".encode())])
                                 for i in range(4)] + [(None, "not json", [])])
    output = topic_with(broker, [(None, json.dumps({"order": {"id": i}, "done": True}), [("trace", f"t{i}".encode())])
                                 for i in (0, 1, 1, 2, 3)])
    by_path = broker.controls.delivery_audit(input_topic=source, output_topic=output, match="$.order.id")
    assert (by_path["verdict"], by_path["consumed"], by_path["duplicated"], by_path["unmatched"]) == (
        "at least once", 4, 1, 1)
    assert by_path["duplicated_examples"][0]["id"] == "1"
    by_header = broker.controls.delivery_audit(input_topic=source, output_topic=output, match="header:trace")
    assert (by_header["verdict"], by_header["duplicated"]) == ("at least once", 1)
    assert by_header["duplicated_examples"][0]["id"] == "t1"


def test_aborted_output_is_not_produced(broker):
    source = topic_with(broker, keyed(KEYS[:3]))
    output = f"audit-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"audit-{uuid.uuid4().hex[:6]}"})
    p.init_transactions(30)
    for committed in (False, True):
        p.begin_transaction()
        for k in KEYS[:3]:
            p.produce(output, b"v", key=k.encode(), partition=0)
        if committed:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    audit = broker.controls.delivery_audit(input_topic=source, output_topic=output)
    assert (audit["verdict"], audit["produced"]) == ("exactly once", 3)


def test_bad_arguments_are_refused_with_a_reason(broker):
    source = topic_with(broker, keyed(KEYS[:1]))
    for arguments, reason in (({"match": "value"}, "match must be"), ({"match": "$.a..b"}, "JSON path"),
                              ({"group": "no-such-group"}, "no group"), ({"examples": -1}, "examples")):
        with pytest.raises(kafkalite.ControlFailed, match=reason):
            broker.controls.delivery_audit(input_topic=source, output_topic=source, **arguments)
    with pytest.raises(kafkalite.ControlFailed, match="no topic"):
        broker.controls.delivery_audit(input_topic=source, output_topic="missing-topic")
