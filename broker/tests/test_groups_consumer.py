"""KIP-848 consumer groups and the server-side assignors, driven by a fake clock."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from kafkalite.broker.groups.assignors import range_, uniform
from kafkalite.broker.groups.consumer import ConsumerGroup, TopicView
from kafkalite.broker.groups.states import MemberState


T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
TOPICS = {"t1": (T1, 6), "t2": (T2, 2)}


def view(topics=TOPICS):
    return TopicView(lambda name: topics.get(name))


def hb(g, member_id="", epoch=0, *, topics=("t1",), owned=None, instance=None, now=0, rebalance=1000,
       assignor=None, tv=None):
    if epoch == 0 and owned is None:
        owned = {}
    return g.heartbeat(member_id=member_id, member_epoch=epoch, instance_id=instance, rack_id=None,
                       rebalance_timeout_ms=rebalance if epoch == 0 else -1, client_id="c", client_host="/h",
                       subscribed_topic_names=list(topics) if epoch == 0 else None, subscribed_topic_regex=None,
                       server_assignor=assignor, owned=owned, topics=tv or view(), now=now)


def a_then_b(g, times=(0, 1, 2, 3)):
    """a joins and gets all of t1; b joins; a hears it must give half back and does, at `times`:
    (a's first answer, b's first answer, a's answer naming what it keeps)."""
    a = hb(g, now=times[0])
    b = hb(g, now=times[1])
    ra = hb(g, a.member_id, 1, owned={T1: set(range(6))}, now=times[2])
    hb(g, a.member_id, 1, owned=ra.assignment, now=times[3])
    return a, b, ra


def count(assign):
    return sum(len(ps) for ps in assign.values())


def test_single_member_gets_everything():
    g = ConsumerGroup("g", session_timeout_ms=500, heartbeat_interval_ms=100)
    r = hb(g)
    assert r.error == ErrorCode.none and r.member_id and r.member_epoch == 1
    assert r.assignment == {T1: set(range(6))}
    assert r.heartbeat_interval_ms == 100
    assert g.state == "Stable"
    # a steady heartbeat returns no assignment
    r2 = hb(g, r.member_id, 1, owned={T1: set(range(6))}, now=50)
    assert r2.error == ErrorCode.none and r2.assignment is None and r2.member_epoch == 1


def test_second_member_revocation_then_assignment():
    g = ConsumerGroup("g", session_timeout_ms=5000)
    a = hb(g)
    b = hb(g, now=10)
    assert b.member_epoch == 2 and g.group_epoch == 2
    # b's share is still owned by a: unreleased, b waits at epoch 2 with nothing
    assert b.assignment == {} and g.members[b.member_id].state == MemberState.UNRELEASED_PARTITIONS
    assert g.state == "Reconciling"
    # a learns it must give up 3 partitions; keeps epoch 1
    ra = hb(g, a.member_id, 1, owned={T1: set(range(6))}, now=20)
    assert ra.member_epoch == 1 and count(ra.assignment) == 3
    assert g.members[a.member_id].state == MemberState.UNREVOKED_PARTITIONS
    kept = ra.assignment[T1]
    # a acknowledges the revocation: moves to epoch 2
    ra2 = hb(g, a.member_id, 1, owned={T1: kept}, now=30)
    assert ra2.member_epoch == 2 and g.members[a.member_id].state == MemberState.STABLE
    # b now gets the released partitions
    rb = hb(g, b.member_id, 2, owned={}, now=40)
    assert rb.assignment == {T1: set(range(6)) - kept}
    assert g.state == "Stable"


def test_leave_gives_partitions_back():
    g = ConsumerGroup("g", session_timeout_ms=5000)
    a, b, ra = a_then_b(g)
    rb = hb(g, b.member_id, 2, owned={}, now=4)
    left = hb(g, b.member_id, -1, now=5)
    assert left.error == ErrorCode.none and left.member_epoch == -1
    assert b.member_id not in g.members and g.group_epoch == 3
    ra3 = hb(g, a.member_id, 2, owned=ra.assignment, now=6)
    assert ra3.member_epoch == 3 and ra3.assignment == {T1: set(range(6))}
    del rb


def test_session_timeout_fences_member():
    g = ConsumerGroup("g", session_timeout_ms=100)
    a, b, ra = a_then_b(g, (0, 10, 50, 60))
    assert g.next_deadline() == 110  # b's session
    assert g.tick(110) == [b.member_id]
    r = hb(g, a.member_id, 2, owned=ra.assignment, now=120)
    assert r.assignment == {T1: set(range(6))}
    # the fenced member is unknown now
    assert hb(g, b.member_id, 2, owned={}, now=130).error == ErrorCode.unknown_member_id


def test_revocation_timeout_fences_member():
    g = ConsumerGroup("g", session_timeout_ms=10_000)
    a = hb(g, rebalance=200)
    hb(g, now=10)
    hb(g, a.member_id, 1, owned={T1: set(range(6))}, now=20)  # asked to revoke at 20
    assert g.members[a.member_id].rebalance_deadline == 220
    assert g.tick(219) == []
    assert g.tick(220) == [a.member_id]


def test_epoch_fencing():
    g = ConsumerGroup("g")
    a = hb(g)
    assert hb(g, a.member_id, 5, owned={}).error == ErrorCode.fenced_member_epoch
    assert hb(g, "someone", 3, owned={}).error == ErrorCode.unknown_member_id
    b = hb(g, now=1)
    ra = hb(g, a.member_id, 1, owned={T1: set(range(6))}, now=2)
    hb(g, a.member_id, 1, owned=ra.assignment, now=3)  # now epoch 2, previous 1
    # the response with epoch 2 was lost: the previous epoch with a subset is accepted
    assert hb(g, a.member_id, 1, owned=ra.assignment, now=4).error == ErrorCode.none
    # ...but not without the owned partitions (unknown ownership), nor with a topic not assigned
    assert hb(g, a.member_id, 1, owned=None, now=4).error == ErrorCode.fenced_member_epoch
    assert hb(g, a.member_id, 1, owned={uuid.uuid4(): set()}, now=4).error == ErrorCode.fenced_member_epoch
    # a fenced member rejoins with epoch 0 and its own id: it gets its assignment back
    r = hb(g, a.member_id, 0, owned={}, now=5)
    assert r.error == ErrorCode.none and r.member_epoch == 2 and r.assignment == ra.assignment
    del b


def test_static_member_temporary_leave_and_rejoin_keeps_assignment():
    g = ConsumerGroup("g", session_timeout_ms=1000)
    a = hb(g, instance="i-1")
    b = hb(g, instance="i-2", now=1)
    ra = hb(g, a.member_id, 1, owned={T1: set(range(6))}, instance="i-1", now=2)
    hb(g, a.member_id, 1, owned=ra.assignment, instance="i-1", now=3)
    rb = hb(g, b.member_id, 2, owned={}, instance="i-2", now=4)
    epoch = g.group_epoch
    left = hb(g, b.member_id, -2, instance="i-2", now=5)
    assert left.member_epoch == -2 and g.group_epoch == epoch
    # a new incarnation of i-2 rejoins with a new member id, gets the same partitions
    b2 = hb(g, str(uuid.uuid4()), 0, instance="i-2", now=6)
    assert b2.error == ErrorCode.none and b2.assignment == rb.assignment
    assert g.group_epoch == epoch
    # a second instance with the same id while the first is active: UNRELEASED_INSTANCE_ID
    assert hb(g, str(uuid.uuid4()), 0, instance="i-2", now=7).error == ErrorCode.unreleased_instance_id
    # and so is the active member itself joining again with epoch 0 (as after FENCED_MEMBER_EPOCH)
    assert hb(g, b2.member_id, 0, instance="i-2", now=8).error == ErrorCode.unreleased_instance_id


def test_metadata_change_bumps_epoch():
    g = ConsumerGroup("g")
    topics = dict(TOPICS)
    a = hb(g, topics=("t1", "new"), tv=view(topics))
    assert a.assignment == {T1: set(range(6))}
    t3 = uuid.UUID(int=3)
    topics["new"] = (t3, 2)
    r = hb(g, a.member_id, 1, owned=a.assignment, tv=view(topics), now=1)
    assert r.member_epoch == 2 and r.assignment == {T1: set(range(6)), t3: {0, 1}}


def test_invalid_assignor():
    g = ConsumerGroup("g")
    assert hb(g, assignor="nope").error == ErrorCode.unsupported_assignor


def test_range_assignor_selected_by_members():
    g = ConsumerGroup("g", session_timeout_ms=5000)
    a = hb(g, "a", assignor="range")
    hb(g, "b", assignor="range", now=1)
    assert g.preferred_assignor() == "range"
    assert g.target["a"] == {T1: {0, 1, 2}} and g.target["b"] == {T1: {3, 4, 5}}
    del a


def test_uniform_is_balanced_and_sticky():
    members = {"a": {"t1", "t2"}, "b": {"t1", "t2"}, "c": {"t1"}}
    first = uniform(members, TOPICS, {})
    counts = sorted(count(v) for v in first.values())
    assert counts == [2, 3, 3] or counts[-1] - counts[0] <= 1
    assert sum(counts) == 8
    owners = [(t, p) for v in first.values() for t, ps in v.items() for p in ps]
    assert len(owners) == len(set(owners)) == 8
    # a leaves: b and c keep what they had
    second = uniform({"b": members["b"], "c": members["c"]}, TOPICS, first)
    for mid in ("b", "c"):
        for t, ps in first[mid].items():
            assert ps <= second[mid].get(t, set())
    assert sum(count(v) for v in second.values()) == 8


def test_uniform_respects_subscriptions():
    out = uniform({"a": {"t2"}, "b": {"t1"}}, TOPICS, {})
    assert out["a"] == {T2: {0, 1}} and out["b"] == {T1: set(range(6))}


def test_range_assignor():
    out = range_({"a": {"t1"}, "b": {"t1"}, "c": {"t1", "t2"}}, {"t1": (T1, 7), "t2": (T2, 2)})
    assert out["a"][T1] == {0, 1, 2} and out["b"][T1] == {3, 4} and out["c"][T1] == {5, 6}
    assert out["c"][T2] == {0, 1}


def test_heartbeat_interval_is_short_while_the_group_changes():
    g = ConsumerGroup("g", session_timeout_ms=60_000, heartbeat_interval_ms=5000, busy_heartbeat_interval_ms=250,
                      busy_window_ms=3000)
    a = hb(g, now=0)
    assert a.heartbeat_interval_ms == 250  # it just changed
    assert hb(g, a.member_id, 1, owned=a.assignment, now=3000).heartbeat_interval_ms == 5000
    b = hb(g, now=4000)
    assert b.heartbeat_interval_ms == 250
    ra = hb(g, a.member_id, 1, owned=a.assignment, now=8000)  # reconciling: still short
    assert g.state == "Reconciling" and ra.heartbeat_interval_ms == 250
    hb(g, a.member_id, 1, owned=ra.assignment, now=8001)
    hb(g, b.member_id, 2, owned={}, now=8002)
    assert g.state == "Stable"
    assert hb(g, b.member_id, 2, owned=None, now=8003).heartbeat_interval_ms == 5000


def test_an_older_epoch_commits_the_partitions_held_since_then():
    """KIP-1251: a member whose epoch-bumping answer was lost commits with its previous epoch;
    Kafka 4.4 accepts the partitions it held at that epoch and refuses the others."""
    import pytest
    from kafkalite.broker.groups.states import GroupError

    g = ConsumerGroup("g", session_timeout_ms=5000)
    a, b, ra = a_then_b(g)
    member = g.members[a.member_id]
    kept, given = ra.assignment[T1], set(range(6)) - ra.assignment[T1]
    assert member.member_epoch == 2
    assert g.validate_offset_commit(a.member_id, None, 2) is None
    held_since_1 = g.validate_offset_commit(a.member_id, None, 1)
    assert held_since_1 is not None
    assert all(held_since_1(T1, p) for p in kept) and not any(held_since_1(T1, p) for p in given)
    with pytest.raises(GroupError) as newer:
        g.validate_offset_commit(a.member_id, None, 3)
    assert newer.value.code == ErrorCode.stale_member_epoch
    # b leaves: a gets the other half back with a new epoch
    hb(g, b.member_id, -1, now=4)
    back = hb(g, a.member_id, 2, owned={T1: kept}, now=5)
    assert back.member_epoch == 3 and back.assignment == {T1: set(range(6))}
    held_since_2 = g.validate_offset_commit(a.member_id, None, 2)
    assert held_since_2 is not None
    assert all(held_since_2(T1, p) for p in kept) and not any(held_since_2(T1, p) for p in given)
    held_since_0 = g.validate_offset_commit(a.member_id, None, 0)
    assert held_since_0 is not None and not any(held_since_0(T1, p) for p in range(6))


def test_a_member_revoking_again_keeps_its_epoch_and_survives_a_lost_answer():
    """Kafka's CurrentAssignmentBuilder: a member that has revoked what it was asked to, and finds
    that the target moved on and takes more away, stays at its epoch (UNREVOKED_PARTITIONS again).
    When that answer is lost, the member's retry (same epoch, same owned partitions) is accepted;
    a coordinator that had bumped the epoch fenced it instead, and the fenced member lost its
    partitions without committing them (franz-go's chaos ETL consumed records twice)."""
    g = ConsumerGroup("g", session_timeout_ms=60_000)
    a = hb(g, now=0)
    assert a.member_epoch == 1 and a.assignment == {T1: set(range(6))}
    hb(g, now=1)  # b joins: group epoch 2
    ra = hb(g, a.member_id, 1, owned={T1: set(range(6))}, now=2)
    assert ra.member_epoch == 1 and count(ra.assignment) == 3
    assert g.members[a.member_id].rebalance_deadline == 2 + 1000
    kept = ra.assignment[T1]
    hb(g, now=3)  # c joins before a acknowledges: group epoch 3, a's target shrinks to 2
    assert g.group_epoch == 3 and count(g.target[a.member_id]) == 2
    ack = hb(g, a.member_id, 1, owned={T1: kept}, now=4)
    member = g.members[a.member_id]
    assert ack.error == ErrorCode.none and ack.member_epoch == 1
    assert member.state == MemberState.UNREVOKED_PARTITIONS and member.member_epoch == 1
    assert count(ack.assignment) == 2 and count(member.pending_revocation) == 1
    # asked again: its rebalance timeout counts from now, as Kafka reschedules it
    assert member.rebalance_deadline == 4 + 1000
    # the answer was lost: the retry carries the same epoch and owned partitions
    retry = hb(g, a.member_id, 1, owned={T1: kept}, now=5)
    assert retry.error == ErrorCode.none and retry.member_epoch == 1 and member.rebalance_deadline == 4 + 1000
    assert member.state == MemberState.UNREVOKED_PARTITIONS and member.assigned == ack.assignment
    # it commits what it consumed of the partition it is revoking, with its epoch
    assert g.validate_offset_commit(a.member_id, None, 1) is None
    # once it reports the second revocation done it moves to the target epoch
    done = hb(g, a.member_id, 1, owned=ack.assignment, now=6)
    assert done.error == ErrorCode.none and done.member_epoch == 3
    assert member.state == MemberState.STABLE and member.previous_member_epoch == 1
