"""Share groups (KIP-932, "queues for Kafka") with the Java KafkaShareConsumer (kafka-clients
4.4.0) and the Java AdminClient: consumers sharing one partition, explicit acknowledgement
(accept, release, reject), delivery counts, a consumer that dies holding records, a broker
restart keeping the share state, read_committed isolation, and the admin calls.

Share consumers run as their own processes (compat_tests/share/members.py) so that one can be
killed. Each test's group starts at the earliest offset (the group config
`share.auto.offset.reset=earliest`, set through IncrementalAlterConfigs on the GROUP resource).
The consumer tests run with both clients that implement share groups in the versions this suite
installs: the Java client, librdkafka (confluent-kafka 2.16's ShareConsumer) and franz-go 1.22
(kgo.ShareGroup). kafka-python, aiokafka, kafkajs and sarama have no share consumer. Set-up and the admin calls use the
Java AdminClient.
"""

from __future__ import annotations

import uuid

import pytest

from compat_tests.cleanup import killed_at_end
from compat_tests.clients.java import JavaClient, JavaError
from compat_tests.share.members import ShareConsumer
from compat_tests.test_groups import new_topic, produce
from compat_tests.waiting import wait_until

pytestmark = [pytest.mark.share_groups]

CLIENTS = [pytest.param("java", marks=pytest.mark.java, id="java"),
           pytest.param("confluent", marks=[pytest.mark.librdkafka, pytest.mark.java], id="librdkafka"),
           pytest.param("franz", marks=[pytest.mark.franz, pytest.mark.java], id="franz")]


@pytest.fixture
def consumers():
    with killed_at_end() as started:
        yield started


def share_group(bootstrap: str, **configs: str) -> str:
    gid = f"sg-{uuid.uuid4().hex[:10]}"
    settings = {"share.auto.offset.reset": "earliest", **configs}
    JavaClient(bootstrap).admin({"op": "incrementalAlterConfigs", "resources": [
        {"type": "GROUP", "name": gid, "ops": [{"name": k, "value": v} for k, v in settings.items()]}]})
    return gid


def lag(bootstrap: str, group: str, topic: str) -> int | None:
    """The lag of partition 0, or None while the broker reports no offset information for it (Kafka
    may, for a moment, while it writes the share-partition's first state)."""
    info = offsets(bootstrap, group, topic)["0"]
    return None if info is None else info["lag"]


@pytest.fixture(params=CLIENTS)
def share_client(request) -> str:
    return request.param


def consumer(consumers, bootstrap, group, topic, **kw) -> ShareConsumer:
    c = ShareConsumer(bootstrap, group, topic, **kw)
    consumers.append(c)
    return c


def offsets(bootstrap: str, group: str, topic: str, partitions=(0,)) -> dict:
    """listShareGroupOffsets: {"P": {"start_offset", "lag"}}. Kafka 4.4 may keep reporting an older
    start offset while the records after it are all acknowledged, so the tests watch the lag."""
    return JavaClient(bootstrap).admin({"op": "listShareGroupOffsets", "group": group, "topic": topic,
                                        "partitions": list(partitions)})[0]


def test_three_consumers_share_one_partition(bootstrap, consumers, share_client):
    topic = new_topic(bootstrap, 1)
    group = share_group(bootstrap)
    members = [consumer(consumers, bootstrap, group, topic, client=share_client, ack_mode="implicit", client_id=f"share-{i}")
               for i in range(3)]
    values = [f"v{i}" for i in range(30)]
    produce(bootstrap, topic, {0: values})

    def delivered():
        return sorted(v for m in members for v in m.values())
    wait_until(lambda: len(delivered()) >= len(values), timeout=60, what="every record delivered")
    assert delivered() == sorted(values)  # each record once: implicit acceptance, no redelivery
    assert all(r["delivery_count"] == 1 for m in members for r in m.records())

    def described():
        return JavaClient(bootstrap).admin({"op": "describeShareGroups", "groups": [group]})[0][group]
    # one partition, three members: every member is assigned the one partition (Kafka assigns in the
    # background, so a member may show an empty assignment for a heartbeat interval)
    def all_assigned():
        g = described()
        return g if sorted(m["assignment"] for m in g["members"]) == [[f"{topic}-0"]] * 3 else None
    d = wait_until(all_assigned, timeout=30, interval=0.5, what="three members, each assigned the partition")
    assert d["state"].lower() == "stable"
    assert sorted(m["client_id"] for m in d["members"]) == ["share-0", "share-1", "share-2"]
    listed = JavaClient(bootstrap).admin({"op": "listShareGroups"})[0]
    mine = [g for g in listed if g["group_id"] == group]
    assert [(g["type"].lower(), g["protocol"], g["state"].lower()) for g in mine] == [("share", "share", "stable")]
    wait_until(lambda: lag(bootstrap, group, topic) == 0, timeout=30, interval=0.5,
               what="no lag once every record is acknowledged")


def test_explicit_acknowledgement_release_and_reject(bootstrap, consumers, share_client):
    topic = new_topic(bootstrap, 1)
    group = share_group(bootstrap)
    produce(bootstrap, topic, {0: ["a", "b", "c"]})
    c = consumer(consumers, bootstrap, group, topic, client=share_client)
    first = c.wait_records(3, timeout=60)
    assert [(r["offset"], r["value"], r["delivery_count"]) for r in first[:3]] == \
        [(0, "a", 1), (1, "b", 1), (2, "c", 1)]
    c.ack(0, "ACCEPT")
    c.ack(1, "RELEASE")
    c.ack(2, "REJECT")
    c.commit()
    # the released record comes back with its second delivery; the rejected one never does
    again = c.wait_records(4, timeout=60)[3]
    assert (again["offset"], again["value"], again["delivery_count"]) == (1, "b", 2)
    c.ack(1, "ACCEPT")
    c.commit()
    wait_until(lambda: lag(bootstrap, group, topic) == 0, timeout=30, interval=0.5,
               what="no lag")
    produce(bootstrap, topic, {0: ["d"]})
    nxt = c.wait_records(5, timeout=60)[4]
    assert (nxt["offset"], nxt["value"], nxt["delivery_count"]) == (3, "d", 1)
    assert [r["offset"] for r in c.records()].count(2) == 1


def test_records_of_a_dead_consumer_are_redelivered(bootstrap, consumers, share_client):
    topic = new_topic(bootstrap, 1)
    group = share_group(bootstrap)
    produce(bootstrap, topic, {0: ["x", "y"]})
    dying = consumer(consumers, bootstrap, group, topic, client=share_client, client_id="dying")
    held = dying.wait_records(2, timeout=60)
    assert [(r["value"], r["delivery_count"]) for r in held] == [("x", 1), ("y", 1)]
    dying.kill()  # holds both records, acknowledges nothing
    heir = consumer(consumers, bootstrap, group, topic, client=share_client, client_id="heir")
    got = heir.wait_records(2, timeout=90)
    assert [(r["offset"], r["value"], r["delivery_count"]) for r in got] == [(0, "x", 2), (1, "y", 2)]
    heir.ack(0, "ACCEPT")
    heir.ack(1, "ACCEPT")
    heir.commit()


@pytest.mark.java
def test_acquisition_lock_expires_for_a_live_consumer(bootstrap, consumers):
    """A consumer that holds records past share.record.lock.duration.ms (15 s: Kafka's smallest by
    default) loses them to another member, and its late acknowledgement fails."""
    topic = new_topic(bootstrap, 1)
    group = share_group(bootstrap, **{"share.record.lock.duration.ms": "15000"})
    produce(bootstrap, topic, {0: ["slow"]})
    slow = consumer(consumers, bootstrap, group, topic, client_id="slow")
    assert [(r["value"], r["delivery_count"]) for r in slow.wait_records(1, timeout=60)] == [("slow", 1)]
    other = consumer(consumers, bootstrap, group, topic, client_id="other")
    # both members hold the partition before the lock expires, so that the record, available again,
    # goes to a member settled in the group (once, on a loaded machine, it was delivered a third time)
    admin = JavaClient(bootstrap)
    wait_until(lambda: sorted(m["assignment"] for m in admin.admin(
        {"op": "describeShareGroups", "groups": [group]})[0][group]["members"]) == [[f"{topic}-0"]] * 2,
        timeout=30, interval=0.2, what="both members assigned the partition")
    got = other.wait_records(1, timeout=60)  # after the lock expired, 15 s after the first delivery
    assert [(r["offset"], r["value"]) for r in got] == [(0, "slow")]
    # delivered again: 2, or 3 when a loaded machine kept the other consumer from returning its
    # first acquisition before that lock expired too (both brokers count every acquisition)
    assert got[0]["delivery_count"] >= 2
    slow.ack(0, "ACCEPT")
    slow.commit()

    def late_ack_failed(m) -> bool:
        return any(e.get("event") == "acknowledged" and 0 in e["offsets"] and e["error"] for e in m.events)

    def deliveries(m) -> list[int]:
        return [r["delivery_count"] for r in m.records() if r["offset"] == 0]
    # the record is no longer the slow consumer's to acknowledge: its acknowledgement fails, reported
    # by commitSync or, when a ShareFetch already carried it, by the acknowledgement callback. Or:
    # the slow consumer's own background ShareFetch, which goes on while the application holds
    # records, took the record when its first lock expired, and the other consumer got it when that
    # second lock expired too. KafkaShareConsumer hands the second delivery over at the next poll, and
    # then reported the acknowledgement of the first neither failed nor committed (seen once on
    # Kafka 4.4, on a loaded machine): the record then stays the other consumer's, as below.
    slow.wait_for(lambda m: late_ack_failed(m) or len(deliveries(m)) > 1, 30,
                  "the late acknowledgement's failure or a second delivery")
    if not late_ack_failed(slow):
        assert deliveries(slow)[1] < got[0]["delivery_count"], (deliveries(slow), got)
    other.ack(0, "ACCEPT")
    other.commit()
    assert [e for e in other.events if e.get("event") == "committed"][-1]["errors"] == 0


@pytest.mark.restart
def test_broker_restart_keeps_share_state(start_broker, consumers, share_client):
    b = start_broker()
    bootstrap = b.bootstrap
    topic = new_topic(bootstrap, 1)
    group = share_group(bootstrap)
    produce(bootstrap, topic, {0: ["r0", "r1", "r2", "r3"]})
    c = consumer(consumers, bootstrap, group, topic, client=share_client)
    c.wait_records(4, timeout=60)
    c.ack(0, "ACCEPT")
    c.ack(1, "REJECT")
    c.ack(2, "RELEASE")
    c.ack(3, "ACCEPT")
    c.commit()
    c.close()
    # after the commit the consumer may poll the released record again before it closes
    seen = [r["offset"] for r in c.records()].count(2)
    wait_until(lambda: lag(bootstrap, group, topic) == 1, timeout=30, interval=0.5,
               what="lag 1: the released record")
    b.restart()
    wait_until(lambda: lag(bootstrap, group, topic) == 1, timeout=30, interval=0.5, what="lag 1 after the restart")
    again = consumer(consumers, bootstrap, group, topic, client=share_client)
    got = again.wait_records(1, timeout=90)
    # only the released record is delivered again, its delivery count kept across the restart (a
    # client may also have fetched it into its buffer before closing without handing it over: that
    # acquisition counts too, so the count is at least one more than the deliveries seen)
    assert [(r["offset"], r["value"]) for r in got] == [(2, "r2")]
    assert got[0]["delivery_count"] >= seen + 1 >= 2
    again.ack(2, "ACCEPT")
    again.commit()
    wait_until(lambda: lag(bootstrap, group, topic) == 0, timeout=30, interval=0.5,
               what="no lag")


@pytest.mark.transactions
def test_read_committed_skips_open_and_aborted_transactions(bootstrap, consumers, share_client):
    from confluent_kafka import Producer

    topic = new_topic(bootstrap, 1)
    group = share_group(bootstrap, **{"share.isolation.level": "read_committed"})

    def txn_producer():
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
        p.init_transactions(30)
        p.begin_transaction()
        return p
    committed = txn_producer()
    committed.produce(topic, value=b"committed-1", partition=0)
    committed.commit_transaction(30)
    aborted = txn_producer()
    aborted.produce(topic, value=b"aborted", partition=0)
    aborted.flush(30)
    aborted.abort_transaction(30)
    still_open = txn_producer()
    still_open.produce(topic, value=b"open", partition=0)
    still_open.flush(30)
    produce(bootstrap, topic, {0: ["plain-after-open"]})

    c = consumer(consumers, bootstrap, group, topic, client=share_client, ack_mode="implicit")
    c.wait_records(1, timeout=60)
    # the open transaction holds back everything after it (the last stable offset)
    with pytest.raises(AssertionError):
        c.wait_records(2, timeout=5)
    assert c.values() == ["committed-1"]
    still_open.commit_transaction(30)
    c.wait_records(3, timeout=60)
    assert c.values() == ["committed-1", "open", "plain-after-open"]


def test_admin_alter_and_delete_share_group_offsets(bootstrap, consumers):
    topic = new_topic(bootstrap, 1)
    group = share_group(bootstrap)
    admin = JavaClient(bootstrap)
    produce(bootstrap, topic, {0: ["o0", "o1", "o2"]})
    c = consumer(consumers, bootstrap, group, topic, ack_mode="implicit")
    c.wait_records(3, timeout=60)
    wait_until(lambda: lag(bootstrap, group, topic) == 0, timeout=30, interval=0.5,
               what="no lag")
    # altering needs an empty group
    err = admin.admin({"op": "alterShareGroupOffsets", "group": group, "topic": topic, "offsets": {"0": 1}},
                      raise_errors=False)[0]
    assert isinstance(err, JavaError) and "GroupNotEmpty" in err.simple_type, err
    c.close()
    wait_until(lambda: not admin.admin({"op": "describeShareGroups", "groups": [group]})[0][group]["members"],
               timeout=60, interval=0.5, what="an empty group")
    admin.admin({"op": "alterShareGroupOffsets", "group": group, "topic": topic, "offsets": {"0": 1}})
    assert offsets(bootstrap, group, topic)["0"]["start_offset"] == 1
    again = consumer(consumers, bootstrap, group, topic, ack_mode="implicit")
    got = again.wait_records(2, timeout=60)
    assert [(r["offset"], r["value"], r["delivery_count"]) for r in got] == [(1, "o1", 1), (2, "o2", 1)]
    again.close()
    wait_until(lambda: not admin.admin({"op": "describeShareGroups", "groups": [group]})[0][group]["members"],
               timeout=60, interval=0.5, what="an empty group")
    admin.admin({"op": "deleteShareGroupOffsets", "group": group, "topics": [topic]})
    assert offsets(bootstrap, group, topic)["0"] is None
    admin.admin({"op": "deleteShareGroups", "groups": [group]})
    listed = admin.admin({"op": "listShareGroups"})[0]
    assert group not in [g["group_id"] for g in listed]
