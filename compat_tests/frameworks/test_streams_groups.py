"""Kafka Streams 4.3.0 with group.protocol=streams (KIP-1071 streams groups), unmodified.

The exactly-once application of test_streams_eos.py (streams/EosTopology.java: a join with a
table, a repartition topic, two aggregations with changelogs) runs with the broker computing
its task assignment. One run checks, with the Java Admin client's streams-group calls
(streams/StreamsAdmin.java) and the read_committed output:

- the broker creates the internal topics (repartition and changelogs, three partitions each, as the
  input has) and one instance gets every task;
- a second instance joins and the nine tasks (three subtopologies) are shared five and four;
- an instance that closes leaves at once (its tasks go to the survivor before any session
  timeout could pass); one killed with SIGKILL is fenced after the session timeout
  (group.streams.session.timeout.ms=6000 on both brokers) and its tasks move;
- the output equals, as a multiset, what the input determines (exactly_once_v2: nothing lost
  or repeated across the moves);
- listGroups for streams groups, describeStreamsGroups, listStreamsGroupOffsets (the source
  partitions committed to their end) and deleteStreamsGroups once the group is empty.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.streams_group_describe.v0.request import StreamsGroupDescribeRequest

from compat_tests import brokers
from compat_tests.clients.librdkafka import LibrdkafkaAdmin
from compat_tests.frameworks import streams_app as sa
from compat_tests.frameworks.test_streams_eos import _assert_output, _output_count
from kafkalite.protocol.client import WireClient

pytestmark = [pytest.mark.frameworks, pytest.mark.streams, pytest.mark.streams_groups]

# Kafka's streams session timeout is at least group.streams.min.session.timeout.ms (45 s by
# default); a test lowers both so that a killed instance is fenced within seconds.
BROKER_CONFIG = {
    "group.streams.session.timeout.ms": 6000,
    "group.streams.min.session.timeout.ms": 6000,
    "group.streams.heartbeat.interval.ms": 1000,
    "group.streams.min.heartbeat.interval.ms": 1000,
    "group.streams.initial.rebalance.delay.ms": 0,
}


@pytest.fixture(scope="module")
def streams_bootstrap(tmp_path_factory):
    brokers.requires_own_broker("broker settings for streams groups")
    with brokers.start(tmp_path_factory.mktemp("streams-broker"), BROKER_CONFIG) as b:
        yield b.bootstrap


def streams_admin(bootstrap: str, group: str, *ops: str) -> list:
    """StreamsAdmin calls in order (one JVM): their results; raises with a Java error."""
    cmd = ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", sa.classpath(), "StreamsAdmin",
           bootstrap, group, *ops]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    if len(lines) != len(ops):
        raise RuntimeError(f"StreamsAdmin {ops}: {len(lines)} answers (exit {res.returncode}):\n{res.stderr[-3000:]}")
    for op, out in zip(ops, lines):
        if "error" in out:
            raise RuntimeError(f"StreamsAdmin {op}: {out['error']}")
    return [out["result"] for out in lines]


def wire_describe(bootstrap: str, group: str) -> dict:
    """StreamsGroupDescribe through the protocol client, in StreamsAdmin's "describe" shape (polling
    with it costs no JVM start per look)."""
    with WireClient(bootstrap) as c:
        d = c.request(StreamsGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False)).groups[0]
    if d.error_code != ErrorCode.none:
        return {"state": d.error_code.name, "members": []}
    return {"state": d.group_state, "members": [
        {"member_id": m.member_id, "process_id": m.process_id,
         "active": [f"{t.subtopology_id}_{p}" for t in m.assignment.active_tasks for p in t.partitions]}
        for m in d.members]}


def wait_group(bootstrap: str, group: str, pred, timeout: float, what: str) -> dict:
    deadline = time.monotonic() + timeout
    desc: dict = {}
    while time.monotonic() < deadline:
        desc = wire_describe(bootstrap, group)
        if pred(desc):
            return desc
        time.sleep(0.2)
    raise AssertionError(f"{what} not seen in {timeout}s; last description: {desc}")


def _balanced(n_members: int, all_tasks: set[str]):
    def pred(desc: dict) -> bool:
        members = desc["members"]
        if desc["state"].lower() != "stable" or len(members) != n_members:
            return False
        owned = [t for m in members for t in m["active"]]
        sizes = sorted(len(m["active"]) for m in members)
        return set(owned) == all_tasks and len(owned) == len(all_tasks) and sizes[-1] - sizes[0] <= 1
    return pred


def test_streams_group_protocol_end_to_end(streams_bootstrap, tmp_path):
    bootstrap = streams_bootstrap
    prefix = f"sg-{uuid.uuid4().hex[:8]}"
    names = sa.topics(prefix)
    app_id = f"{prefix}-app"
    admin = LibrdkafkaAdmin(bootstrap)
    for role, name in names.items():
        admin.create_topic(name, sa.PARTITIONS, {"cleanup.policy": "compact"} if role == "customers" else None)
    p = sa.producer(bootstrap)
    sa.produce_customers(p, names["customers"])
    sa.produce_orders(p, names["orders"], 0, 300)

    instances: list[sa.StreamsInstance] = []

    def start(name: str) -> sa.StreamsInstance:
        conf = sa.config(bootstrap, app_id, tmp_path / f"state-{name}", **{"group.protocol": "streams"})
        for classic_only in ("consumer.group.protocol", "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"):
            conf.pop(classic_only)
        inst = sa.StreamsInstance(name, conf, names, tmp_path / f"{name}.log")
        instances.append(inst)
        return inst

    try:
        a = start("a")
        a.wait_running()
        sa.wait_output(lambda: _output_count(bootstrap, names), 300, timeout=120)

        wait_group(bootstrap, app_id, lambda d: d["state"].lower() == "stable", 30, "a stable group")
        listing, desc = streams_admin(bootstrap, app_id, "list", "describe")
        listed = {g["group_id"]: g for g in listing}
        assert listed[app_id]["type"].lower() == "streams", listed
        subtopologies = desc["subtopologies"]
        # orders and customers; then one subtopology per repartition topic (the sum and the window count)
        assert len(subtopologies) == 3, subtopologies
        all_tasks = {f"{s['id']}_{p}" for s in subtopologies for p in range(sa.PARTITIONS)}
        assert _balanced(1, all_tasks)(desc), desc
        assert desc["group_epoch"] == desc["target_assignment_epoch"] and desc["topology_epoch"] >= 0
        assert _balanced(1, all_tasks)(wire_describe(bootstrap, app_id))
        # the broker created the internal topics the topology names, with the sources' partition count
        internal = {t for s in subtopologies for t in s["changelog_topics"] + s["repartition_source_topics"]}
        assert {f"{app_id}-{s}-changelog" for s in ("customers-store", "totals-store", "window-counts")} <= internal
        assert any(t.endswith("-repartition") for t in internal), internal
        for t in internal:
            assert admin.describe_topics([t])[t]["partitions"] == list(range(sa.PARTITIONS)), t

        # a second instance joins: the tasks are shared
        b = start("b")
        b.wait_running()
        desc = wait_group(bootstrap, app_id, _balanced(2, all_tasks), 60, "two members sharing the tasks")
        assert len({m["process_id"] for m in desc["members"]}) == 2
        sa.produce_orders(p, names["orders"], 300, 600)
        sa.wait_output(lambda: _output_count(bootstrap, names), 600, timeout=120)

        # a clean close leaves the group at once
        b.close()
        closed_at = time.monotonic()
        wait_group(bootstrap, app_id, _balanced(1, all_tasks), 30, "the survivor with every task after a close")
        left_after = time.monotonic() - closed_at
        assert left_after < 5.5, f"a closed member was removed only after {left_after:.1f} s (session timeout?)"

        # a killed instance is fenced after the session timeout; its tasks move to the survivor
        c = start("c")
        c.wait_running()
        wait_group(bootstrap, app_id, _balanced(2, all_tasks), 60, "two members after c joined")
        c.kill()
        killed_at = time.monotonic()
        wait_group(bootstrap, app_id, _balanced(1, all_tasks), 40, "the survivor with every task after a kill")
        fenced_after = time.monotonic() - killed_at
        assert fenced_after > 4, f"a killed member was removed after {fenced_after:.1f} s, before its session timeout"
        sa.produce_orders(p, names["orders"], 600, 900)
        sa.wait_output(lambda: _output_count(bootstrap, names), 900, timeout=120)
        a.close()
        assert not any(i.errors() for i in instances), [i.errors() for i in instances]
        _assert_output(bootstrap, names, 900)

        # committed offsets: every source partition consumed to its end
        wait_group(bootstrap, app_id, lambda d: not d["members"] and d["state"].lower() == "empty", 30, "an empty group")
        offsets, deleted, listing = streams_admin(bootstrap, app_id, "offsets", "delete", "list")
        ends = admin.list_offsets(names["orders"], range(sa.PARTITIONS), "latest")
        for part in range(sa.PARTITIONS):
            assert offsets.get(f"{names['orders']}:{part}") == ends[part][0], (offsets, ends)
        assert deleted == "deleted"
        assert app_id not in {g["group_id"] for g in listing}
        print(f"closed member left after {left_after:.2f} s; killed member fenced after {fenced_after:.2f} s")
    finally:
        for inst in instances:
            inst.stop(timeout=20)
