"""The classic group state machine, driven by a fake clock (no trio, no sockets)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkalite.broker.groups.classic import ClassicGroup
from kafkalite.broker.groups.classic_members import SyncResult
from kafkalite.broker.groups.states import ClassicGroupState as S

PROTOCOLS = [("range", b"meta-range"), ("roundrobin", b"meta-rr")]


class Box:
    def __init__(self):
        self.values = []

    def __call__(self, value):
        self.values.append(value)

    @property
    def value(self):
        assert len(self.values) == 1, self.values
        return self.values[0]


def join(group, member_id="", now=0, *, instance=None, session=1000, rebalance=2000, protocols=PROTOCOLS,
         v=9, client_id="c"):
    box = Box()
    res = group.join(member_id=member_id, group_instance_id=instance, client_id=client_id, client_host="/127.0.0.1",
                     session_timeout_ms=session, rebalance_timeout_ms=rebalance, protocol_type="consumer",
                     protocols=protocols, require_known_member_id=v >= 4, supports_skip_assignment=v >= 9,
                     waiter=box, now=now)
    if res is not None:
        box(res)
    return box


def sync(group, member_id, generation, assignments=None, now=0, instance=None):
    box = Box()
    res = group.sync(member_id=member_id, group_instance_id=instance, generation_id=generation,
                     protocol_type="consumer", protocol_name=None, assignments=assignments or {}, waiter=box, now=now)
    if res is not None:
        box(res)
    return box


def new_member(group, now=0, **kw) -> str:
    first = join(group, now=now, **kw)
    assert first.value.error == ErrorCode.member_id_required
    return first.value.member_id


def make_group(**kw):
    return ClassicGroup("g", min_session_timeout_ms=10, **kw)


def stable_pair(g):
    """Two members, a (the leader, which hands out an assignment to each) and b, joined and synced
    into generation 1 at time 0."""
    a, b = new_member(g), new_member(g)
    join(g, a), join(g, b)
    sync(g, b, 1)
    sync(g, a, 1, {a: b"1", b: b"2"})
    return a, b


def test_member_id_required_then_join_completes_at_once():
    g = make_group()
    mid = new_member(g)
    assert g.state == S.EMPTY
    box = join(g, mid)
    res = box.value
    assert res.error == ErrorCode.none
    assert res.generation_id == 1 and res.leader == mid and res.member_id == mid
    assert res.protocol_name == "range"
    assert [m[0] for m in res.members] == [mid]
    assert g.state == S.COMPLETING_REBALANCE
    s = sync(g, mid, 1, {mid: b"A"})
    assert s.value == SyncResult(ErrorCode.none, "consumer", "range", b"A")
    assert g.state == S.STABLE


def test_v3_join_without_member_id_needs_no_second_round_trip():
    g = make_group()
    box = join(g, v=3)
    assert box.value.error == ErrorCode.none and box.value.member_id
    assert g.state == S.COMPLETING_REBALANCE


def test_second_member_triggers_rebalance_and_both_get_the_new_generation():
    g = make_group()
    a = new_member(g)
    join(g, a)
    sync(g, a, 1, {a: b"all"})
    b = new_member(g, now=10)
    jb = join(g, b, now=10)
    assert jb.values == [] and g.state == S.PREPARING_REBALANCE
    # a learns it through its heartbeat
    assert g.heartbeat(member_id=a, group_instance_id=None, generation_id=1, now=20) == ErrorCode.rebalance_in_progress
    ja = join(g, a, now=30)
    assert ja.value.generation_id == 2 and jb.value.generation_id == 2
    assert ja.value.leader == a and len(ja.value.members) == 2 and jb.value.members == []
    sb = sync(g, b, 2, now=31)
    assert sb.values == []
    sa = sync(g, a, 2, {a: b"x", b: b"y"}, now=32)
    assert sa.value.assignment == b"x" and sb.value.assignment == b"y"
    assert g.state == S.STABLE


def test_pending_member_holds_the_join_phase_back():
    g = make_group()
    a = new_member(g)
    b = new_member(g)
    ja = join(g, a)
    assert ja.values == [] and g.state == S.PREPARING_REBALANCE  # b is pending
    jb = join(g, b)
    assert ja.value.generation_id == jb.value.generation_id == 1


def test_pending_member_expires_after_session_timeout():
    g = make_group()
    a = new_member(g)
    new_member(g)  # never comes back
    ja = join(g, a)
    assert ja.values == []
    g.tick(999)
    assert ja.values == []
    g.tick(1000)
    assert ja.value.generation_id == 1 and len(ja.value.members) == 1


def test_session_timeout_removes_member_and_rebalances():
    g = make_group()
    a, b = stable_pair(g)
    assert g.state == S.STABLE
    # only a heartbeats
    assert g.heartbeat(member_id=a, group_instance_id=None, generation_id=1, now=900) == ErrorCode.none
    g.tick(1000)  # b's session (1000 ms from its sync at 0) expired
    assert b not in g.members and g.state == S.PREPARING_REBALANCE
    assert g.next_deadline() is not None
    ja2 = join(g, a, now=1001)
    assert ja2.value.generation_id == 2 and len(ja2.value.members) == 1


def test_rebalance_timeout_drops_members_that_do_not_rejoin():
    g = make_group()
    a, b = stable_pair(g)
    c = new_member(g, now=100)
    jc = join(g, c, now=100)
    ja = join(g, a, now=150)
    # b keeps heartbeating but never rejoins: rebalance timeout (2000) passes
    for t in range(200, 2100, 300):
        g.heartbeat(member_id=b, group_instance_id=None, generation_id=1, now=t)
    g.tick(2099)
    assert jc.values == []
    g.tick(2100)
    assert jc.value.generation_id == 2 and b not in g.members
    assert {m[0] for m in ja.value.members} == {a, c}


def test_leave_group_triggers_rebalance_and_completes_when_rest_rejoined():
    g = make_group()
    a, b = stable_pair(g)
    assert g.leave([(b, None)], now=10) == [ErrorCode.none]
    assert g.state == S.PREPARING_REBALANCE
    ja = join(g, a, now=11)
    assert ja.value.generation_id == 2
    assert g.leave([("nope", None)], now=12) == [ErrorCode.unknown_member_id]
    assert g.leave([(a, None)], now=13) == [ErrorCode.none]
    assert g.state == S.EMPTY and g.generation_id == 3


def test_last_member_leaving_empties_group():
    g = make_group()
    a = new_member(g)
    join(g, a)
    sync(g, a, 1, {})
    g.leave([(a, None)], now=5)
    assert g.state == S.EMPTY and g.generation_id == 2


def test_errors_unknown_member_illegal_generation_rebalance_in_progress():
    g = make_group()
    a = new_member(g)
    join(g, a)
    assert sync(g, "x", 1).value.error == ErrorCode.unknown_member_id
    assert sync(g, a, 7).value.error == ErrorCode.illegal_generation
    assert g.heartbeat(member_id=a, group_instance_id=None, generation_id=1, now=1) == ErrorCode.none
    assert g.heartbeat(member_id=a, group_instance_id=None, generation_id=0, now=1) == ErrorCode.illegal_generation
    assert join(g, "bogus").value.error == ErrorCode.unknown_member_id
    b = new_member(g)
    join(g, b)
    assert sync(g, a, 1).value.error == ErrorCode.rebalance_in_progress


def test_sync_waiters_get_rebalance_in_progress_when_a_new_member_arrives():
    g = make_group()
    a, b = new_member(g), new_member(g)
    join(g, a), join(g, b)
    sb = sync(g, b, 1)
    assert sb.values == []
    c = new_member(g)
    join(g, c)
    assert sb.value.error == ErrorCode.rebalance_in_progress


def test_inconsistent_protocols_and_session_timeout_bounds():
    g = make_group()
    a = new_member(g)
    join(g, a)
    assert join(g, protocols=[("other", b"")]).value.error == ErrorCode.inconsistent_group_protocol
    assert join(g, session=5).value.error == ErrorCode.invalid_session_timeout


def test_protocol_chosen_by_vote():
    g = make_group()
    a = new_member(g)
    b = new_member(g)
    join(g, a, protocols=[("rr", b""), ("range", b"")])
    jb = join(g, b, protocols=[("range", b""), ("rr", b"")])
    assert jb.value.protocol_name in ("rr", "range")
    c = new_member(g)
    jc = join(g, c, protocols=[("range", b"")])
    join(g, a, protocols=[("rr", b""), ("range", b"")])
    join(g, b, protocols=[("range", b""), ("rr", b"")])
    assert jc.value.protocol_name == "range"


def test_static_member_restart_keeps_assignment_without_rebalance():
    g = make_group()
    ja = join(g, instance="i-1")
    a = ja.value.member_id
    assert ja.value.error == ErrorCode.none  # static members skip MEMBER_ID_REQUIRED
    jb = join(g, instance="i-2")
    assert jb.values == []  # a must rejoin first
    join(g, a, instance="i-1")
    b = jb.value.member_id
    sync(g, b, 2, instance="i-2")
    sync(g, a, 2, {a: b"A", b: b"B"}, instance="i-1")
    assert g.state == S.STABLE
    # i-2 restarts: new member id, same instance id, no rebalance
    jb2 = join(g, instance="i-2", now=50)
    assert jb2.value.error == ErrorCode.none and jb2.value.generation_id == 2
    b2 = jb2.value.member_id
    assert b2 != b and g.state == S.STABLE
    assert sync(g, b2, 2, instance="i-2", now=51).value.assignment == b"B"
    # the old incarnation is fenced
    assert g.heartbeat(member_id=b, group_instance_id="i-2", generation_id=2, now=52) == ErrorCode.fenced_instance_id
    # the static leader restarts: skip_assignment with the member list (v9)
    ja2 = join(g, instance="i-1", now=60)
    assert ja2.value.skip_assignment and len(ja2.value.members) == 2 and ja2.value.leader == ja2.value.member_id
    assert g.state == S.STABLE


def test_static_member_session_timeout_rebalances():
    g = make_group()
    ja = join(g, instance="i-1")
    a = ja.value.member_id
    sync(g, a, 1, {a: b"A"})
    g.tick(1000)
    assert g.state == S.EMPTY and not g.members


def test_leave_by_instance_id():
    g = make_group()
    a = join(g, instance="i-1").value.member_id
    sync(g, a, 1, {})
    assert g.leave([("", "i-1")], now=1) == [ErrorCode.none]
    assert g.leave([("", "i-9")], now=1) == [ErrorCode.unknown_member_id]


def test_initial_rebalance_delay_batches_first_joins():
    g = make_group(initial_rebalance_delay_ms=100)
    a = new_member(g)
    ja = join(g, a, now=0)
    b = new_member(g, now=50)
    jb = join(g, b, now=50)
    g.tick(100)
    assert ja.values == []  # extended to 150 by b
    g.tick(150)
    assert ja.value.generation_id == jb.value.generation_id == 1


def test_member_not_syncing_is_removed_after_rebalance_timeout():
    g = make_group()
    a, b = new_member(g), new_member(g)
    join(g, a), join(g, b)
    sa = sync(g, a, 1, {a: b"", b: b""})  # leader syncs; becomes Stable
    assert sa.value.error == ErrorCode.none and g.state == S.STABLE


def test_persisted_value_roundtrip():
    from kafkalite.broker.groups.records import decode_group_metadata_value, group_metadata_value
    g = make_group()
    a = join(g, instance="i-1").value.member_id
    sync(g, a, 1, {a: b"A"})
    v = decode_group_metadata_value(group_metadata_value(g.to_record_value()))
    g2 = make_group()
    g2.load_record_value(v, now=0)
    assert g2.state == S.STABLE and g2.generation_id == 1 and g2.members[a].assignment == b"A"
    assert g2.static_members == {"i-1": a}
    assert g2.heartbeat(member_id=a, group_instance_id="i-1", generation_id=1, now=1) == ErrorCode.none


def test_static_leader_restart_before_v9_names_the_old_leader():
    g = make_group()
    a = join(g, instance="i-1", v=5).value.member_id
    sync(g, a, 1, {a: b"A"}, instance="i-1")
    res = join(g, instance="i-1", v=5, now=10).value
    assert res.error == ErrorCode.none and res.member_id != a
    assert res.leader == a and res.members == [] and not res.skip_assignment  # acts as a follower
    assert g.state == S.STABLE
    assert sync(g, res.member_id, 1, instance="i-1", now=11).value.assignment == b"A"


def test_members_joining_an_empty_group_together_form_one_generation():
    g = make_group(burst_settle_ms=100)
    a = new_member(g, now=0)
    b = new_member(g, now=1)
    ja, jb = join(g, a, now=2), join(g, b, now=3)
    assert ja.values == [] and g.next_deadline() == 103
    c = new_member(g, now=40)  # a third one, a little late
    jc = join(g, c, now=41)
    g.tick(140)
    assert ja.values == []
    g.tick(141)
    assert ja.value.generation_id == jb.value.generation_id == jc.value.generation_id == 1
    assert len(ja.value.members) == 3


def test_a_lone_member_forms_its_group_at_once_even_with_burst_settling():
    g = make_group(burst_settle_ms=100)
    a = new_member(g, now=0)
    assert join(g, a, now=1).value.generation_id == 1


def test_static_members_joining_an_empty_group_together_form_one_generation():
    # two static members (no MEMBER_ID_REQUIRED round trip) whose JoinGroups arrive 1 ms apart:
    # the first must not form a generation of its own, which it would sync and be assigned every
    # partition of, only to revoke them all when the second arrives (librdkafka's 0102 scenario)
    g = make_group(burst_settle_ms=100)
    ja = join(g, instance="consumer1", now=0)
    assert ja.values == [] and g.next_deadline() == 100
    jb = join(g, instance="consumer2", now=1)
    g.tick(100)
    assert ja.values == [] and jb.values == []
    g.tick(101)
    assert ja.value.generation_id == jb.value.generation_id == 1
    assert sorted(i for _, i, _ in ja.value.members) == ["consumer1", "consumer2"]
    assert jb.value.members == []


def test_a_lone_static_member_forms_its_group_after_the_burst_window():
    g = make_group(burst_settle_ms=100)
    ja = join(g, instance="consumer1", now=0)
    g.tick(99)
    assert ja.values == []
    g.tick(100)
    assert ja.value.generation_id == 1 and g.state == S.COMPLETING_REBALANCE
