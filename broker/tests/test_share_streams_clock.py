"""Share and streams groups follow the broker clock: an `advance-clock` past a share acquisition
lock (share.record.lock.duration.ms) releases the records at once, and one past a share or
streams session timeout removes the member at once, not after that much wall-clock time."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request as req
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers

from .test_nodes_share_streams import streams_heartbeat
from .test_share_wire import acquired, create_and_produce, earliest, fetch, join


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(controls=0) as b:
        yield b


def test_a_share_lock_expires_at_once_after_an_advance_past_its_duration(broker):
    topic, group = f"c-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap) as w1, WireClient(broker.bootstrap) as w2:
        tid = create_and_produce(w1, topic, 2)
        earliest(w1, group, **{"share.record.lock.duration.ms": "20000"})
        join(w1, group, "m1", topic)
        join(w2, group, "m2", topic)
        assert acquired(fetch(w1, group, "m1", tid, 0)) == [(0, 1, 1)]
        assert acquired(fetch(w2, group, "m2", tid, 0)) == []  # m1 holds them
        # 5 s short of the lock: wall-clock time passes too (a loaded machine takes more than 1 s
        # between the acquisition and the next fetch), and must not decide the answer
        broker.controls.advance_clock(ms=15_000)
        assert acquired(fetch(w2, group, "m2", tid, 1)) == []  # not yet
        broker.controls.advance_clock(ms=5_001)
        # past the lock: both records are available again, for their second delivery
        assert acquired(fetch(w2, group, "m2", tid, 2)) == [(0, 1, 2)]
        # m1 no longer holds them: its acknowledgement is refused
        late = fetch(w1, group, "m1", tid, 1, acks=[(0, 1, 1)])
        assert late.responses[0].partitions[0].acknowledge_error_code == ErrorCode.invalid_record_state


def test_a_share_member_is_removed_at_once_after_an_advance_past_the_session_timeout(broker):
    topic, group = f"c-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    describe = req(77, 1, group_ids=[group], include_authorized_operations=False)
    with WireClient(broker.bootstrap) as w:
        create_and_produce(w, topic, 1)
        join(w, group, "m1", topic)
        assert [m.member_id for m in w.request(describe).groups[0].members] == ["m1"]
        broker.controls.advance_clock(ms=45_001)  # group.share.session.timeout.ms
        (g,) = w.request(describe).groups
        assert (g.group_state, g.members) == ("Empty", ())


def test_a_streams_member_is_removed_at_once_after_an_advance_past_the_session_timeout(broker):
    topic, group = f"c-{uuid.uuid4().hex[:8]}", f"st-{uuid.uuid4().hex[:8]}"
    describe = req(89, 0, group_ids=[group], include_authorized_operations=False)
    with WireClient(broker.bootstrap) as w:
        create_and_produce(w, topic, 1)
        joined = w.request(streams_heartbeat(group, "s1", topic))
        assert joined.error_code == ErrorCode.none
        assert [m.member_id for m in w.request(describe).groups[0].members] == ["s1"]
        broker.controls.advance_clock(ms=45_001)  # group.streams.session.timeout.ms
        (g,) = w.request(describe).groups
        assert (g.group_state, g.members) == ("Empty", ())
