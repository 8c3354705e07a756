"""The console's groups page in a real browser (headless Chromium, Playwright) for the newer
group types: a share group held by a real Java KafkaShareConsumer (members, assignment, the
share-partition's start offset and its acquired records with delivery counts and lock), and a
streams group (topology status, members with process ids and their active tasks).

Chromium and the artifacts directory are those of test_console_browser.py.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer
from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request as req
from compat_tests.share.members import ShareConsumer
from compat_tests.waiting import wait_until
from kafkalite.protocol.client import WireClient

from . import test_console_browser as console_browser
from .test_nodes_share_streams import streams_heartbeat

# the Chromium, page and screenshot of the console's other browser tests
browser = console_browser.browser
page = console_browser.page
_shot = console_browser._shot

pytestmark = [pytest.mark.browser, pytest.mark.java, pytest.mark.share_groups, pytest.mark.streams_groups]


@pytest.fixture(scope="module")
def broker(console_broker):
    return console_broker


def _group_card(page, broker, group: str, group_type: str):
    """The groups page's card of `group`, once it shows, after checking the type it names."""
    page.goto(f"{broker.console_url}#/groups")
    card = page.locator(f"[data-testid=group][data-id='{group}']")
    card.wait_for()
    assert card.get_by_test_id("group-type").inner_text() == group_type
    return card


def _topic(wire: WireClient, name: str) -> None:
    r = wire.request(req(19, 7, timeout=10000, validate_only=False, topics=[
        {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}]))
    assert r.topics[0].error_code == ErrorCode.none


def test_groups_page_shows_a_share_group_and_its_share_partition(broker, page):
    topic, group = f"share-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap) as wire:
        _topic(wire, topic)
        r = wire.request(req(44, 1, validate_only=False, resources=[
            {"resource_type": 32, "resource_name": group, "configs": [
                {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}]))
        assert r.responses[0].error_code == ErrorCode.none
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for v in ("a", "b", "c"):
        producer.produce(topic, value=v.encode())
    assert producer.flush(15) == 0

    consumer = ShareConsumer(broker.bootstrap, group, topic, client_id="console-share")
    try:
        got = consumer.wait_records(3, timeout=60)
        assert [(r["offset"], r["delivery_count"]) for r in got] == [(0, 1), (1, 1), (2, 1)]
        consumer.ack(0, "ACCEPT")
        consumer.commit()

        card = _group_card(page, broker, group, "share (KIP-932)")
        assert card.get_by_test_id("group-state").inner_text() == "Stable"
        member = card.locator("[data-testid=share-member]")
        assert member.count() == 1
        assert "console-share" in member.inner_text()
        assert member.get_by_test_id("member-assignment").inner_text() == f"{topic}-0"
        sp = card.locator(f"[data-testid=share-partition][data-tp='{topic}-0']")
        # offset 0 acknowledged: the start offset moved past it; 1 and 2 still held by the consumer
        wait_until(lambda: sp.get_by_test_id("start-offset").inner_text() == "1", timeout=10,
                   what="the start offset past the acknowledged record")
        held = sp.locator("[data-testid=in-flight][data-state=ACQUIRED]")
        assert held.get_by_test_id("in-flight-count").inner_text() == "2"
        run = held.get_by_test_id("run").inner_text()
        assert run.startswith("1–2 (delivery 1, ") and " lock " in run, run
        assert sp.get_by_test_id("lag").inner_text() == "2"
        _shot(page, "groups-share")

        # live: the consumer acknowledges the rest, and the page follows without a reload
        consumer.ack(1, "ACCEPT")
        consumer.ack(2, "ACCEPT")
        consumer.commit()
        wait_until(lambda: sp.get_by_test_id("start-offset").inner_text() == "3", timeout=10,
                   what="the start offset after every record is acknowledged")
        assert sp.get_by_test_id("lag").inner_text() == "0"
    finally:
        consumer.kill()


def test_groups_page_shows_a_streams_group_with_processes_and_tasks(broker, page):
    topic, group = f"streams-{uuid.uuid4().hex[:8]}", f"st-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap) as wire:
        _topic(wire, topic)
        joined = wire.request(streams_heartbeat(group, "s1", topic))
        assert joined.error_code == ErrorCode.none
        missing = wire.request(streams_heartbeat(f"{group}-x", "s2", f"{topic}-missing"))
        assert missing.error_code == ErrorCode.none

        card = _group_card(page, broker, group, "streams (KIP-1071)")
        assert card.get_by_test_id("topology-status").inner_text() == "READY"
        sub = card.locator("[data-testid=subtopology][data-id='0']")
        assert topic in sub.inner_text()
        member = card.locator("[data-testid=streams-member][data-id='s1']")
        assert member.get_by_test_id("process-id").inner_text() == "proc-s1"
        wait_until(lambda: member.get_by_test_id("active-tasks").inner_text() == "0_0", timeout=10,
                   what="the member's active task")
        other = page.locator(f"[data-testid=group][data-id='{group}-x']")
        assert other.get_by_test_id("topology-status").inner_text() == "MISSING_SOURCE_TOPICS"
        assert other.get_by_test_id("group-state").inner_text() == "NotReady"
        _shot(page, "groups-streams")


@pytest.mark.streams
@pytest.mark.frameworks
def test_groups_page_shows_a_kafka_streams_app(broker, page, tmp_path):
    """A real Kafka Streams 4.3 application (compat_tests/frameworks/streams/EosTopology.java) with
    group.protocol=streams: the page shows its topology (three subtopologies), its one member with
    the process id and all nine active tasks, and the committed offsets of its source topics."""
    from compat_tests.frameworks import streams_app as sa
    from compat_tests.frameworks.test_streams_groups import wait_group, wire_describe

    prefix = f"console-{uuid.uuid4().hex[:8]}"
    names = sa.topics(prefix)
    app_id = f"{prefix}-app"
    with WireClient(broker.bootstrap) as wire:
        for role, name in names.items():
            r = wire.request(req(19, 7, timeout=10000, validate_only=False, topics=[
                {"name": name, "num_partitions": sa.PARTITIONS, "replication_factor": 1, "assignments": [],
                 "configs": [{"name": "cleanup.policy", "value": "compact"}] if role == "customers" else []}]))
            assert r.topics[0].error_code == ErrorCode.none
    p = sa.producer(broker.bootstrap)
    sa.produce_customers(p, names["customers"])
    sa.produce_orders(p, names["orders"], 0, 60)
    conf = sa.config(broker.bootstrap, app_id, tmp_path / "state", **{"group.protocol": "streams"})
    for classic_only in ("consumer.group.protocol", "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"):
        conf.pop(classic_only)
    app = sa.StreamsInstance("console", conf, names, tmp_path / "streams.log")
    try:
        app.wait_running()
        desc = wait_group(broker.bootstrap, app_id, lambda d: d["state"] == "Stable" and len(d["members"]) == 1
                          and len(d["members"][0]["active"]) == 9, 60, "one stable member with nine tasks")
        (member,) = desc["members"]

        card = _group_card(page, broker, app_id, "streams (KIP-1071)")
        assert card.get_by_test_id("group-state").inner_text() == "Stable"
        assert card.get_by_test_id("topology-status").inner_text() == "READY"
        assert card.locator("[data-testid=subtopology]").count() == 3
        row = card.locator(f"[data-testid=streams-member][data-id='{member['member_id']}']")
        assert row.get_by_test_id("process-id").inner_text() == member["process_id"]
        shown = row.get_by_test_id("active-tasks").inner_text().split(", ")
        assert sorted(shown) == sorted(member["active"]) and len(shown) == 9
        # exactly-once commits of the source topics: every orders partition is committed, live
        orders = [card.locator(f"[data-testid=group-offset][data-tp='{names['orders']}-{i}']") for i in range(3)]
        wait_until(lambda: all(o.count() == 1 and o.get_by_test_id("lag").inner_text() == "0" for o in orders),
                   timeout=30, what="the orders partitions committed to their end")
        assert wire_describe(broker.bootstrap, app_id)["members"][0]["process_id"] == member["process_id"]
        _shot(page, "groups-streams-app")
    finally:
        app.kill()
