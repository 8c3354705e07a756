"""KIP-1071 streams groups at the protocol level, the same requests to kafkalite and to Apache Kafka:
StreamsGroupHeartbeat with a topology whose source topic is missing (status
MISSING_SOURCE_TOPICS, state NotReady), then present (the broker creates the repartition and
changelog topics with the source's partition count and assigns every task), StreamsGroupDescribe,
ListGroups with the streams type, the other group APIs refusing a streams group, a leave and
DeleteGroups; a group that survives a broker restart. The Kafka Streams client itself is in
frameworks/test_streams_groups.py.
"""

from __future__ import annotations

import datetime
import time
import uuid

import pytest
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.describe_groups.v6.request import DescribeGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.streams_group_describe.v0.request import StreamsGroupDescribeRequest
from kio.schema.streams_group_heartbeat.v0 import request as hb
from kio.static.primitive import i8, i16, i32, i32Timedelta

from compat_tests.clients.librdkafka import LibrdkafkaAdmin
from kafkalite.protocol.client import WireClient

pytestmark = [pytest.mark.streams_groups]

MISSING_SOURCE_TOPICS = 1
RETRIABLE = (ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available, ErrorCode.not_coordinator)


def topology(app: str, source: str) -> hb.Topology:
    """Subtopology 0 reads the source, keeps a store and writes a repartition topic that
    subtopology 1 reads."""
    def info(name: str, configs=()) -> hb.TopicInfo:
        return hb.TopicInfo(name=name, partitions=i32(0), replication_factor=i16(0),
                            topic_configs=tuple(hb.KeyValue(key=k, value=v) for k, v in configs))
    return hb.Topology(epoch=i32(1), subtopologies=(
        hb.Subtopology(subtopology_id="0", source_topics=(source,), source_topic_regex=(),
                       state_changelog_topics=(info(f"{app}-store-changelog", [("cleanup.policy", "compact")]),),
                       repartition_sink_topics=(f"{app}-rekey-repartition",), repartition_source_topics=(),
                       copartition_groups=()),
        hb.Subtopology(subtopology_id="1", source_topics=(), source_topic_regex=(), state_changelog_topics=(),
                       repartition_sink_topics=(),
                       repartition_source_topics=(info(f"{app}-rekey-repartition", [("cleanup.policy", "delete")]),),
                       copartition_groups=()),
    ))


def heartbeat(c: WireClient, group: str, member: str, epoch: int, *, join_topology=None, active=None,
              join_active: tuple | None = (), others: tuple | None = (), shutdown: bool = False):
    """`active`: the tasks the member owns, or None for unchanged; standby and warmup tasks go
    with it as `others` (Kafka wants all three or none)."""
    joining = join_topology is not None
    rest = () if joining else (others if active is not None else None)
    return c.request(hb.StreamsGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=i32(epoch), endpoint_information_epoch=i32(0),
        instance_id=None, rack_id=None, rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topology=join_topology, active_tasks=join_active if joining else active, standby_tasks=rest,
        warmup_tasks=rest, process_id="process-1" if joining else None, user_endpoint=None,
        client_tags=() if joining else None, task_offsets=None, task_end_offsets=None, shutdown_application=shutdown))


def describe(c: WireClient, group: str):
    return c.request(StreamsGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False)).groups[0]


def tasks(ids) -> dict[str, list[int]]:
    return {t.subtopology_id: sorted(t.partitions) for t in ids or ()}


def wait_coordinator(c: WireClient, group: str) -> None:
    deadline = time.monotonic() + 30
    while c.request(FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(group,))).coordinators[0].error_code \
            != ErrorCode.none:
        assert time.monotonic() < deadline
        time.sleep(0.3)


def join_until_assigned(c: WireClient, app: str, source: str, member: str):
    """Join, then heartbeat until the member has tasks; the last response."""
    deadline = time.monotonic() + 30
    epoch = 0
    while time.monotonic() < deadline:
        r = heartbeat(c, app, member, epoch, join_topology=topology(app, source) if epoch == 0 else None)
        if r.error_code in RETRIABLE:
            time.sleep(0.3)
            continue
        assert r.error_code == ErrorCode.none, r
        epoch = r.member_epoch
        if r.active_tasks:
            return r
        time.sleep(0.3)
    raise AssertionError(f"no tasks assigned in 30 s: {r}")


def test_streams_group_heartbeat_describe_and_admin(bootstrap):
    app = f"sgw-{uuid.uuid4().hex[:8]}"
    source = f"{app}-input"
    member = str(uuid.uuid4())
    with WireClient(bootstrap) as c:
        wait_coordinator(c, app)
        deadline = time.monotonic() + 30
        # a join must say it owns no tasks (an empty list, not null)
        bad = heartbeat(c, app, member, 0, join_topology=topology(app, source), join_active=None)
        assert bad.error_code == ErrorCode.invalid_request
        assert bad.error_message == "ActiveTasks must be empty when (re-)joining."
        partial = heartbeat(c, app, member, 1, active=(), others=None)
        assert partial.error_code == ErrorCode.invalid_request
        assert partial.error_message == "If one task-type is non-null, all must be non-null."

        while True:
            r = heartbeat(c, app, member, 0, join_topology=topology(app, source))
            if r.error_code not in RETRIABLE or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert r.error_code == ErrorCode.none, r
        assert r.member_id == member and r.member_epoch >= 1
        statuses = {(s.status_code, s.status_detail) for s in r.status}
        assert (MISSING_SOURCE_TOPICS, f"Source topics {source} are missing.") in statuses, statuses
        assert tasks(r.active_tasks) == {} and r.standby_tasks == () and r.warmup_tasks == ()
        epoch = r.member_epoch

        d = describe(c, app)
        assert d.error_code == ErrorCode.none and d.group_state == "NotReady"
        assert [m.member_id for m in d.members] == [member] and d.members[0].process_id == "process-1"
        listed = c.request(ListGroupsRequest(states_filter=(), types_filter=("streams",))).groups
        assert [(g.group_id, g.protocol_type, g.group_type) for g in listed if g.group_id == app] == \
            [(app, "streams", "streams")]
        classic = c.request(DescribeGroupsRequest(groups=(app,), include_authorized_operations=False)).groups[0]
        assert classic.error_code == ErrorCode.group_id_not_found
        assert classic.error_message == f"Group {app} is not a classic group." and classic.group_state == "Dead"
        consumer = c.request(ConsumerGroupDescribeRequest(group_ids=(app,), include_authorized_operations=False))
        assert consumer.groups[0].error_code == ErrorCode.group_id_not_found
        assert consumer.groups[0].error_message == f"Group {app} is not a consumer group."
        assert c.request(DeleteGroupsRequest(groups_names=(app,))).results[0].error_code == ErrorCode.non_empty_group

        # the source appears: the broker creates the internal topics and assigns every task
        LibrdkafkaAdmin(bootstrap).create_topic(source, 2)
        deadline = time.monotonic() + 30
        active: dict = {}
        while time.monotonic() < deadline:
            r = heartbeat(c, app, member, epoch, active=None)
            assert r.error_code == ErrorCode.none, r
            epoch = r.member_epoch
            if r.active_tasks is not None:
                active = tasks(r.active_tasks)
            if active:
                break
            time.sleep(0.3)
        assert active == {"0": [0, 1], "1": [0, 1]}
        assert not [s for s in r.status if s.status_code == MISSING_SOURCE_TOPICS]
        admin = LibrdkafkaAdmin(bootstrap)
        for name in (f"{app}-store-changelog", f"{app}-rekey-repartition"):
            assert admin.describe_topics([name])[name]["partitions"] == [0, 1], name
        assert admin.describe_configs("topic", f"{app}-store-changelog")["cleanup.policy"].value == "compact"

        d = describe(c, app)
        assert d.group_state == "Stable" and d.group_epoch == d.assignment_epoch
        assert d.members[0].member_epoch == epoch
        assert tasks(d.members[0].assignment.active_tasks) == active
        assert tasks(d.members[0].target_assignment.active_tasks) == active
        topics = {t.name: t.partitions for s in d.topology.subtopologies
                  for t in s.state_changelog_topics + s.repartition_source_topics}
        assert topics == {f"{app}-store-changelog": 2, f"{app}-rekey-repartition": 2}

        # a member's request to shut the application down is every heartbeat's status from then on
        shutdown = (4, f"Streams group member {member} encountered a fatal error and requested a shutdown "
                       "for the entire application.")
        r = heartbeat(c, app, member, epoch, shutdown=True)
        assert shutdown in {(s.status_code, s.status_detail) for s in r.status}, r.status
        r = heartbeat(c, app, member, r.member_epoch)
        assert shutdown in {(s.status_code, s.status_detail) for s in r.status}, r.status

        # leave; the empty group can be deleted
        left = heartbeat(c, app, member, -1)
        assert left.error_code == ErrorCode.none and left.member_epoch == -1
        assert describe(c, app).group_state == "Empty"
        assert c.request(DeleteGroupsRequest(groups_names=(app,))).results[0].error_code == ErrorCode.none
        gone = describe(c, app)
        assert gone.error_code == ErrorCode.group_id_not_found and gone.error_message == f"Group {app} not found."


@pytest.mark.restart
def test_streams_group_survives_broker_restart(start_broker):
    b = start_broker()
    app = f"sgr-{uuid.uuid4().hex[:8]}"
    source = f"{app}-input"
    member = str(uuid.uuid4())
    LibrdkafkaAdmin(b.bootstrap).create_topic(source, 2)
    with WireClient(b.bootstrap) as c:
        wait_coordinator(c, app)
        r = join_until_assigned(c, app, source, member)
        before = describe(c, app)
    assert before.group_state == "Stable"
    b.restart()
    deadline = time.monotonic() + 60
    with WireClient(b.bootstrap) as c:
        while True:
            after = describe(c, app)
            if after.error_code not in RETRIABLE or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert after.error_code == ErrorCode.none, after
        assert after.topology.epoch == 1 and after.group_epoch >= before.group_epoch
        assert [(m.member_id, m.member_epoch, m.process_id) for m in after.members] == \
            [(member, r.member_epoch, "process-1")]
        assert tasks(after.members[0].assignment.active_tasks) == {"0": [0, 1], "1": [0, 1]}
        # the member carries on with its epoch and its tasks
        owned = tuple(hb.TaskIds(subtopology_id=t.subtopology_id, partitions=t.partitions) for t in r.active_tasks)
        again = heartbeat(c, app, member, r.member_epoch, active=owned)
        assert again.error_code == ErrorCode.none and again.member_epoch >= r.member_epoch, again.error_message
