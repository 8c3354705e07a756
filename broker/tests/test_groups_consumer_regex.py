"""KIP-848 regular-expression subscriptions (SubscribedTopicRegex) as Kafka 4.4 resolves them:
after the heartbeat that brings the regex, over every topic (internal ones too), again when a
topic appears and the last resolution is 10 s old, and with Kafka's error for a regex that does
not compile. Driven by a fake clock."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from kafkalite.broker.groups.consumer import ConsumerGroup, TopicView

REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000  # Kafka's, in GroupMetadataManager
T1, T2, T3, OFFSETS = (uuid.UUID(int=i) for i in (1, 2, 3, 9))


class Topics:
    """A cluster's topics the test creates and deletes."""

    def __init__(self, **topics: tuple[uuid.UUID, int]) -> None:
        self.topics = dict(topics)

    def view(self) -> TopicView:
        return TopicView(lambda name: self.topics.get(name), lambda: list(self.topics))


def hb(g: ConsumerGroup, topics: Topics, member_id: str = "", epoch: int = 0, *, regex: str | None = None,
       names: list[str] | None = None, owned=None, now: int = 0):
    joining = epoch == 0
    return g.heartbeat(member_id=member_id, member_epoch=epoch, instance_id=None, rack_id=None,
                       rebalance_timeout_ms=1000 if joining else -1, client_id="c", client_host="/h",
                       subscribed_topic_names=(names or []) if joining else names, subscribed_topic_regex=regex,
                       server_assignor=None, owned={} if joining and owned is None else owned,
                       topics=topics.view(), now=now)


def test_the_regex_is_resolved_after_the_heartbeat_that_brings_it():
    cluster = Topics(t1=(T1, 6), t2=(T2, 2), other=(T3, 1))
    g = ConsumerGroup("g")
    first = hb(g, cluster, regex="t.*")
    assert first.error == ErrorCode.none and first.assignment == {}
    again = hb(g, cluster, first.member_id, first.member_epoch, owned={}, now=100)
    assert again.assignment == {T1: set(range(6)), T2: {0, 1}} and again.member_epoch == 2


def test_names_are_assigned_at_once_and_the_regex_topics_on_a_later_heartbeat():
    """librdkafka 0045 (do_test_resubscribe_with_regex), KIP-848: the literal topic first."""
    cluster = Topics(topic_regex1=(T1, 4), topic_regex2=(T2, 4), topic_a=(T3, 2))
    g = ConsumerGroup("g")
    first = hb(g, cluster, regex="^.*topic_regex.*", names=["topic_a"])
    assert first.assignment == {T3: {0, 1}}
    later = hb(g, cluster, first.member_id, first.member_epoch, owned=first.assignment, now=100)
    assert later.assignment == {T1: set(range(4)), T2: set(range(4)), T3: {0, 1}}


def test_internal_topics_match_like_any_other():
    cluster = Topics(__consumer_offsets=(OFFSETS, 3), t1=(T1, 1))
    g = ConsumerGroup("g")
    first = hb(g, cluster, regex="__consumer_offsets")
    assert hb(g, cluster, first.member_id, 1, owned={}, now=10).assignment == {OFFSETS: {0, 1, 2}}


def test_a_new_matching_topic_is_resolved_once_the_last_resolution_is_10_s_old():
    cluster = Topics(t1=(T1, 2), x=(T3, 1))
    g = ConsumerGroup("g")
    m = hb(g, cluster, regex="t.*", now=0)
    r = hb(g, cluster, m.member_id, 1, owned={}, now=1)  # resolved at 1
    assert r.assignment == {T1: {0, 1}}
    epoch = r.member_epoch
    cluster.topics["t2"] = (T2, 1)
    for now in (1000, REGEX_BATCH_REFRESH_MIN_INTERVAL_MS + 1, REGEX_BATCH_REFRESH_MIN_INTERVAL_MS + 2):
        quiet = hb(g, cluster, m.member_id, epoch, owned={T1: {0, 1}}, now=now)
        assert quiet.member_epoch == epoch and quiet.assignment is None, now
    # the heartbeat at 10 002 ms (past 1 + 10 000) asked for a resolution; it runs at the next one
    assert g.regex_refresh_due and g.resolved_regexes["t.*"].topics == {"t1"}
    grown = hb(g, cluster, m.member_id, epoch, owned={T1: {0, 1}}, now=REGEX_BATCH_REFRESH_MIN_INTERVAL_MS + 3)
    assert grown.assignment == {T1: {0, 1}, T2: {0}} and grown.member_epoch > epoch


def test_a_deleted_topic_leaves_the_assignment_at_once():
    cluster = Topics(t1=(T1, 2), t2=(T2, 1))
    g = ConsumerGroup("g")
    m = hb(g, cluster, regex="t.*")
    r = hb(g, cluster, m.member_id, 1, owned={}, now=1)
    del cluster.topics["t2"]
    gone = hb(g, cluster, m.member_id, r.member_epoch, owned=r.assignment, now=2)
    assert gone.assignment == {T1: {0, 1}}


def test_a_replaced_regex_moves_the_members_without_owning_a_partition_twice():
    cluster = Topics(a1=(T1, 4), b1=(T2, 4))
    g = ConsumerGroup("g")
    x = hb(g, cluster, regex="a.*", now=0)
    y = hb(g, cluster, regex="a.*", now=1)
    owned = {x.member_id: x.assignment, y.member_id: y.assignment}
    epochs = {x.member_id: x.member_epoch, y.member_id: y.member_epoch}

    def round_(now: int, regex: dict[str, str | None]) -> None:
        for mid in (x.member_id, y.member_id):
            r = hb(g, cluster, mid, epochs[mid], regex=regex.get(mid), owned=owned[mid], now=now)
            assert r.error == ErrorCode.none
            epochs[mid] = r.member_epoch
            if r.assignment is not None:
                owned[mid] = r.assignment
            held = [(t, p) for ps in owned.values() for t, pp in ps.items() for p in pp]
            assert len(held) == len(set(held)), f"a partition owned twice: {owned}"

    for now in range(10, 60, 10):
        round_(now, {})
    assert {p for ps in owned.values() for p in ps.get(T1, ())} == set(range(4))
    # both members replace the regex: a1 is revoked, b1 given out, never to two at once
    round_(100, {x.member_id: "b.*", y.member_id: "b.*"})
    for now in range(110, 200, 10):
        round_(now, {})
    assert all(T1 not in ps for ps in owned.values())
    assert sorted(p for ps in owned.values() for p in ps.get(T2, ())) == [0, 1, 2, 3]
    assert set(g.resolved_regexes) == {"b.*"}


def test_a_regex_that_does_not_compile_is_refused_with_kafkas_error():
    cluster = Topics(t1=(T1, 1))
    g = ConsumerGroup("g")
    r = hb(g, cluster, regex="t(")
    assert r.error == ErrorCode.invalid_regular_expression
    assert r.error_message is not None and r.error_message.startswith(
        "SubscribedTopicRegex `t(` is not a valid regular expression: ")
    assert not g.members


def test_a_regex_its_last_member_left_is_resolved_again_after_the_next_join():
    """librdkafka 0045 (do_test_resubscribe_with_regex), KIP-848: unsubscribing from the regex
    and subscribing to it and a name again gets the name first, then the regex's topics."""
    cluster = Topics(topic_regex1=(T1, 4), topic_a=(T3, 2))
    g = ConsumerGroup("g")
    m = hb(g, cluster, regex="topic_regex.*")
    hb(g, cluster, m.member_id, m.member_epoch, owned={}, now=1)
    hb(g, cluster, m.member_id, -1, now=2)
    assert not g.resolved_regexes
    again = hb(g, cluster, m.member_id, 0, regex="topic_regex.*", names=["topic_a"], now=3)
    assert again.assignment == {T3: {0, 1}}
