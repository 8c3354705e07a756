"""Streams groups (KIP-1071): the sticky task assignor, topology configuration and the group's
state machine with a fake clock."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkalite.broker.groups.streams import (
    Status,
    StreamsGroup,
    StreamsGroupState,
    Subtopology,
    TopicInfo,
    Topology,
    configure,
    validate_heartbeat,
)
from kafkalite.broker.groups.streams_assignor import AssignorMember, Tasks, assign


def _active(result, m):
    return Tasks.flat(result[m].active)


def _standby(result, m):
    return Tasks.flat(result[m].standby)


# --- the assignor ---------------------------------------------------------------------------

def test_assignor_balances_active_tasks():
    members = {f"m{i}": AssignorMember(f"p{i}") for i in range(3)}
    result = assign(members, {"0": 7, "1": 3}, set(), 0)
    counts = sorted(len(_active(result, m)) for m in members)
    assert counts == [3, 3, 4]
    everything = set().union(*(_active(result, m) for m in members))
    assert everything == {("0", p) for p in range(7)} | {("1", p) for p in range(3)}
    assert sum(counts) == len(everything)  # no task twice


def test_assignor_is_sticky():
    before = {"a": AssignorMember("pa"), "b": AssignorMember("pb")}
    first = assign(before, {"0": 6}, set(), 0)
    members = {m: AssignorMember(f"p{m}", _active(first, m)) for m in first}
    members["c"] = AssignorMember("pc")
    second = assign(members, {"0": 6}, set(), 0)
    assert sorted(len(_active(second, m)) for m in second) == [2, 2, 2]
    # each old member keeps two of its three tasks; only the moved ones go to c
    for m in ("a", "b"):
        assert _active(second, m) <= _active(first, m)
    # unchanged membership: nothing moves
    again = assign({m: AssignorMember(f"p{m}", _active(second, m)) for m in second}, {"0": 6}, set(), 0)
    assert all(_active(again, m) == _active(second, m) for m in second)


def test_assignor_prefers_standby_owner_for_a_moving_task():
    members = {"a": AssignorMember("pa", set(), {("0", 0)}), "b": AssignorMember("pb")}
    result = assign(members, {"0": 2}, {"0"}, 0)
    assert ("0", 0) in _active(result, "a")


def test_assignor_places_standbys_on_other_processes():
    members = {"a1": AssignorMember("p1"), "a2": AssignorMember("p1"), "b": AssignorMember("p2"),
               "c": AssignorMember("p3")}
    result = assign(members, {"0": 4, "1": 4}, {"0"}, 1)
    process = {m: members[m].process_id for m in members}
    for p in range(4):
        task = ("0", p)
        owner = next(m for m in members if task in _active(result, m))
        holders = [m for m in members if task in _standby(result, m)]
        assert len(holders) == 1, (task, holders)
        assert process[holders[0]] != process[owner]
    # stateless subtopology 1: no standbys
    assert not any(t[0] == "1" for m in members for t in _standby(result, m))


def test_assignor_gives_fewer_standbys_without_processes():
    members = {"a": AssignorMember("p1"), "b": AssignorMember("p1")}
    result = assign(members, {"0": 2}, {"0"}, 1)
    assert not any(_standby(result, m) for m in members)


# --- topology configuration -------------------------------------------------------------------

def _topology(epoch=1, copartition=False):
    return Topology(epoch, (
        Subtopology("0", source_topics=("orders", "customers"), repartition_sink_topics=("app-rep",),
                    state_changelog_topics=(TopicInfo("app-store-changelog", configs=(("cleanup.policy", "compact"),)),),
                    copartition_groups=(((0, 1), (), ()),) if copartition else ()),
        Subtopology("1", repartition_source_topics=(TopicInfo("app-rep"),),
                    state_changelog_topics=(TopicInfo("app-totals-changelog"),)),
    ))


def test_configure_missing_source_topics():
    c = configure(_topology(), {"orders": 3}.get, [])
    assert c.tasks is None
    assert c.status == (Status.MISSING_SOURCE_TOPICS, "Source topics customers are missing.")


def test_configure_decides_internal_partitions():
    c = configure(_topology(), {"orders": 3, "customers": 2}.get, [])
    assert c.tasks == {"0": 3, "1": 3}
    assert c.stateful == {"0", "1"}
    assert c.internal_partitions == {"app-rep": 3, "app-store-changelog": 3, "app-totals-changelog": 3}
    assert set(c.missing_internal_topics) == {"app-rep", "app-store-changelog", "app-totals-changelog"}
    assert c.status[0] == Status.MISSING_INTERNAL_TOPICS
    done = configure(_topology(), {"orders": 3, "customers": 2, "app-rep": 3, "app-store-changelog": 3,
                                   "app-totals-changelog": 3}.get, [])
    assert done.status is None and not done.missing_internal_topics


def test_configure_incorrectly_partitioned():
    c = configure(_topology(copartition=True), {"orders": 3, "customers": 2}.get, [])
    assert c.tasks is None and c.status[0] == Status.INCORRECTLY_PARTITIONED_TOPICS
    c = configure(_topology(), {"orders": 3, "customers": 3, "app-rep": 5}.get, [])
    assert c.status == (Status.INCORRECTLY_PARTITIONED_TOPICS,
                        "Existing topic app-rep has different number of partitions: expected 3, found 5")


# --- the group --------------------------------------------------------------------------------

class Cluster:
    def __init__(self, **topics):
        self.topics = dict(topics)

    def create(self, missing, partitions):
        for name in missing:
            self.topics[name] = partitions[name]


def _hb(group, cluster, member, epoch, now, topology=None, active=None, process=None, instance=None):
    joining = epoch == 0
    return group.heartbeat(member_id=member, member_epoch=epoch, endpoint_information_epoch=0, instance_id=instance,
                           rack_id=None, rebalance_timeout_ms=1000, topology=topology or (_topology() if joining else None),
                           active=set() if joining else active, process_id=process or f"proc-{member}",
                           user_endpoint=None, client_tags=None, client_id="c", client_host="/127.0.0.1",
                           lookup=cluster.topics.get, names=lambda: list(cluster.topics), now=now,
                           create=cluster.create)


def test_group_join_missing_source_then_created():
    cluster = Cluster(orders=2)
    g = StreamsGroup("app")
    r = _hb(g, cluster, "a", 0, 0)
    assert r.error == ErrorCode.none and r.member_epoch == 1
    assert r.status == [(Status.MISSING_SOURCE_TOPICS, "Source topics customers are missing.")]
    assert g.state == StreamsGroupState.NOT_READY
    cluster.topics["customers"] = 2
    r = _hb(g, cluster, "a", r.member_epoch, 10)
    assert r.status == []
    assert cluster.topics["app-rep"] == 2 and cluster.topics["app-store-changelog"] == 2
    assert Tasks.flat(r.assignment.active) == {("0", 0), ("0", 1), ("1", 0), ("1", 1)}
    assert g.state == StreamsGroupState.STABLE


def test_group_revocation_handshake_and_session_timeout():
    cluster = Cluster(orders=2, customers=2)
    g = StreamsGroup("app", session_timeout_ms=100)
    a = _hb(g, cluster, "a", 0, 0)
    a_tasks = Tasks.flat(a.assignment.active)
    assert len(a_tasks) == 4
    b = _hb(g, cluster, "b", 0, 1)
    # b's target tasks are still a's: b waits for them
    assert not b.assignment.active
    assert g.state == StreamsGroupState.RECONCILING
    a2 = _hb(g, cluster, "a", a.member_epoch, 2, active=a_tasks)
    kept = Tasks.flat(a2.assignment.active)
    assert len(kept) == 2 and a2.member_epoch == a.member_epoch  # revoking: same epoch
    b2 = _hb(g, cluster, "b", b.member_epoch, 3, active=set())
    assert b2.assignment is None  # a has not revoked yet
    a3 = _hb(g, cluster, "a", a2.member_epoch, 4, active=kept)
    assert a3.member_epoch > a.member_epoch
    b3 = _hb(g, cluster, "b", b2.member_epoch, 5, active=set())
    assert Tasks.flat(b3.assignment.active) == a_tasks - kept
    assert g.state == StreamsGroupState.STABLE
    # a stops heartbeating: after the session timeout its tasks go to b
    _hb(g, cluster, "b", b3.member_epoch, 90, active=a_tasks - kept)
    assert g.tick(120) == ["a"]
    b4 = _hb(g, cluster, "b", b3.member_epoch, 130, active=a_tasks - kept)
    assert Tasks.flat(b4.assignment.active) == a_tasks


def test_group_fencing_leave_and_static_members():
    cluster = Cluster(orders=1, customers=1)
    g = StreamsGroup("app")
    a = _hb(g, cluster, "a", 0, 0, instance="i-1")
    assert _hb(g, cluster, "a", a.member_epoch + 5, 1).error == ErrorCode.fenced_member_epoch
    assert _hb(g, cluster, "x", 3, 1).error == ErrorCode.unknown_member_id
    # another incarnation of i-1 while a is there
    assert _hb(g, cluster, "a2", 0, 2, instance="i-1").error == ErrorCode.unreleased_instance_id
    # a temporary leave keeps the tasks for the next incarnation
    assert _hb(g, cluster, "a", -2, 3, instance="i-1").member_epoch == -2
    a2 = _hb(g, cluster, "a2", 0, 4, instance="i-1")
    assert a2.error == ErrorCode.none
    assert Tasks.flat(a2.assignment.active) == Tasks.flat(a.assignment.active)
    assert _hb(g, cluster, "a2", -1, 5, instance="i-1").member_epoch == -1
    assert g.is_empty() and g.state == StreamsGroupState.EMPTY


def test_validate_heartbeat():
    t = _topology()
    assert validate_heartbeat("g", "m", 0, None, None, 1000, t, (), (), (), "p") is None
    assert validate_heartbeat("g", "m", 0, None, None, 1000, t, None, (), (), "p") == \
        "ActiveTasks must be empty when (re-)joining."
    assert validate_heartbeat("", "m", 0, None, None, 1000, t, (), (), (), "p") == "GroupId can't be empty."
    assert validate_heartbeat("g", "m", -2, None, None, -1, None, None, None, None, None) == "InstanceId can't be null."


# --- persistence in __consumer_offsets ----------------------------------------------------------

def _coordinator(cluster=None, clock=None):
    from types import SimpleNamespace

    from kafkalite.broker.groups import GroupCoordinator
    from kafkalite.broker.tests.test_groups_coordinator import CONFIG, Clock, FakeCluster, fake_services

    config = {**CONFIG, "group.streams.session.timeout.ms": 1000, "group.streams.heartbeat.interval.ms": 100,
              "group.streams.num.standby.replicas": 1}
    broker = SimpleNamespace(config=config, cluster=cluster or FakeCluster(), services=fake_services(config))
    coord = GroupCoordinator(broker, clock=clock or Clock())
    broker.services.groups = coord
    return coord


def _coord_hb(coord, member, epoch, *, active=None, instance=None, process=None):
    joining = epoch == 0
    return coord.streams_group_heartbeat(
        group_id="app", member_id=member, member_epoch=epoch, endpoint_information_epoch=0, instance_id=instance,
        rack_id=None, rebalance_timeout_ms=1000, topology=_topology() if joining else None,
        active=set() if joining else active, process_id=process or f"proc-{member}",
        user_endpoint=("host-" + member, 8080) if joining else None,
        client_tags={"zone": "a"} if joining else None, client_id="c", client_host="/127.0.0.1")


def test_streams_group_survives_restart():
    from kafkalite.broker.groups.streams_records import decode_key

    coord = _coordinator()
    coord.cluster.create_topic("orders", 2)
    coord.cluster.create_topic("customers", 2)
    a = _coord_hb(coord, "a", 0, instance="i-a")
    b = _coord_hb(coord, "b", 0)
    a = _coord_hb(coord, "a", a.member_epoch, active=Tasks.flat(a.assignment.active), instance="i-a")
    a = _coord_hb(coord, "a", a.member_epoch, active=Tasks.flat(a.assignment.active), instance="i-a")
    b = _coord_hb(coord, "b", b.member_epoch, active=set())
    group = coord.groups["app"]
    assert group.state == StreamsGroupState.STABLE
    # the records are Kafka's streams group record types
    written = {decode_key(k)[0] for k in group.persisted}
    assert written == {17, 19, 22, 23}

    again = _coordinator(coord.cluster, coord.clock)
    again.load()
    g2 = again.groups["app"]
    assert isinstance(g2, StreamsGroup)
    assert g2.topology == group.topology and g2.group_epoch == group.group_epoch
    for mid, m in group.members.items():
        m2 = g2.members[mid]
        assert (m2.member_epoch, m2.process_id, m2.user_endpoint, m2.client_tags, m2.instance_id) == \
            (m.member_epoch, m.process_id, m.user_endpoint, m.client_tags, m.instance_id)
        assert m2.assigned.key() == m.assigned.key()
    # members carry on with their epochs and keep their tasks
    r = _coord_hb(again, "b", b.member_epoch, active=Tasks.flat(group.members["b"].assigned.active))
    assert r.error == ErrorCode.none
    assert Tasks.flat(again.groups["app"].members["b"].assigned.active) == Tasks.flat(group.members["b"].assigned.active)
    # a leave and a delete leave nothing behind after another restart
    _coord_hb(again, "a", -1, instance="i-a")
    _coord_hb(again, "b", -1)
    assert again.delete_groups(["app"]) == [("app", ErrorCode.none)]
    third = _coordinator(coord.cluster, coord.clock)
    third.load()
    assert "app" not in third.groups


def test_offset_commit_checks_member_epochs():
    coord = _coordinator()
    coord.cluster.create_topic("orders", 1)
    coord.cluster.create_topic("customers", 1)
    a = _coord_hb(coord, "a", 0)
    a = _coord_hb(coord, "a", a.member_epoch, active=Tasks.flat(a.assignment.active))
    ok = coord.validate_commit("app", a.member_epoch, "a", None, 9)
    assert ok == ErrorCode.none
    assert coord.validate_commit("app", a.member_epoch - 1, "a", None, 9) == ErrorCode.stale_member_epoch
    assert coord.validate_commit("app", a.member_epoch, "nobody", None, 9) == ErrorCode.unknown_member_id
    # TxnOffsetCommit (exactly_once_v2) sees a stale epoch as an illegal generation, as for consumer groups
    assert coord.validate_commit("app", a.member_epoch - 1, "a", None, 9, transactional=True) == \
        ErrorCode.illegal_generation
    assert coord.fetch_offsets("app", None, require_stable=False, member_id="a", member_epoch=0)[0] == \
        ErrorCode.stale_member_epoch
    assert coord.list_groups(types=["streams"]) == [("app", "streams", "Stable", "streams")]


def test_oversized_internal_topics_are_not_created():
    coord = _coordinator()
    coord.cluster.create_topic("orders", 1)
    coord.cluster.create_topic("customers", 1)
    huge = Topology(1, (Subtopology("0", source_topics=("orders",),
                                    state_changelog_topics=(TopicInfo("big-changelog", partitions=50_000),)),))
    r = coord.streams_group_heartbeat(
        group_id="app", member_id="a", member_epoch=0, endpoint_information_epoch=0, instance_id=None, rack_id=None,
        rebalance_timeout_ms=1000, topology=huge, active=set(), process_id="p", user_endpoint=None, client_tags=None,
        client_id="c", client_host="/127.0.0.1")
    assert r.error == ErrorCode.none
    assert "big-changelog" not in coord.cluster.topics
    assert [code for code, _ in r.status] == [Status.MISSING_INTERNAL_TOPICS]


def test_bad_internal_topic_names_and_configs_are_not_created():
    coord = _coordinator()
    coord.cluster.create_topic("orders", 1)
    bad = Topology(1, (Subtopology("0", source_topics=("orders",), state_changelog_topics=(
        TopicInfo("../escape-changelog"), TopicInfo("ok-changelog", configs=(("cleanup.policy", "sideways"),)),
        TopicInfo("good-changelog", configs=(("cleanup.policy", "compact"),)))),))
    r = coord.streams_group_heartbeat(
        group_id="app", member_id="a", member_epoch=0, endpoint_information_epoch=0, instance_id=None, rack_id=None,
        rebalance_timeout_ms=1000, topology=bad, active=set(), process_id="p", user_endpoint=None, client_tags=None,
        client_id="c", client_host="/127.0.0.1")
    assert r.error == ErrorCode.none
    assert "../escape-changelog" not in coord.cluster.topics and "ok-changelog" not in coord.cluster.topics
    assert coord.cluster.topics["good-changelog"].configs == {"cleanup.policy": "compact"}
    assert r.status == [(Status.MISSING_INTERNAL_TOPICS,
                         "Internal topics are missing: ../escape-changelog, ok-changelog")]


def test_shutdown_application_reaches_every_member():
    cluster = Cluster(orders=1, customers=1)
    g = StreamsGroup("app")
    a = _hb(g, cluster, "a", 0, 0)
    b = _hb(g, cluster, "b", 0, 1)
    r = g.heartbeat(member_id="a", member_epoch=a.member_epoch, endpoint_information_epoch=0, instance_id=None,
                    rack_id=None, rebalance_timeout_ms=-1, topology=None, active=None, process_id=None,
                    user_endpoint=None, client_tags=None, client_id="c", client_host="/h", lookup=cluster.topics.get,
                    names=lambda: list(cluster.topics), now=2, shutdown_application=True)
    detail = "Streams group member a encountered a fatal error and requested a shutdown for the entire application."
    assert (Status.SHUTDOWN_APPLICATION, detail) in r.status
    assert (Status.SHUTDOWN_APPLICATION, detail) in _hb(g, cluster, "b", b.member_epoch, 3, active=None).status
    _hb(g, cluster, "a", -1, 4)
    _hb(g, cluster, "b", -1, 5)
    assert g.shutdown_requested_by is None
