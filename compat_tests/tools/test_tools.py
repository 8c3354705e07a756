"""Kafka's own command-line tools (kafka-tools 4.4.0) against the broker, each through its real
main class with an operator's arguments: topics, the console producer and consumer, consumer
groups, transactions, topic and group configs, ACLs, offsets by time, delete-records, log dirs,
share and streams groups, the perf tests and the verifiable producer and consumer. Each case
asserts on what the tool printed, its exit status and the state it left, and passes on Apache
Kafka 4.4 too (``COMPAT_BROKER=kafka``).

The tools whose APIs are still missing from kafkalite (client quotas, features upgrade,
metadata-quorum, leader election, reassignments, client metrics, delegation tokens) are in
test_tools_new_apis.py.
"""

from __future__ import annotations

import json
import re
import time
import uuid

import pytest

from compat_tests.tools.conftest import active_consumer, open_transaction
from compat_tests.waiting import wait_until

pytestmark = [pytest.mark.tools, pytest.mark.timeout(180)]


def table(lines: list[str], first: str) -> list[dict[str, str]]:
    """The rows of a whitespace-separated table whose header starts with `first`."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in lines:
        cells = line.split()
        if cells and cells[0] == first:
            header = cells
            continue
        if header is not None and cells and not line.startswith(("Error", "Consumer group")):
            rows.append(dict(zip(header, cells)))
    return rows


def describe_configs(line: str) -> dict[str, str]:
    """The ``Configs:`` of a kafka-topics --describe summary line."""
    text = line.split("Configs:", 1)[1].strip()
    return dict(kv.split("=", 1) for kv in text.split(",") if kv)


def cells(line: str) -> list[str]:
    """The tab-separated cells of a kafka-transactions table line, stripped."""
    return [c.strip() for c in line.split("\t")]


def produce(kt, topic: str, lines: list[str], *args: str) -> None:
    kt("kafka-console-producer", "--topic", topic, *args, stdin="".join(f"{line}\n" for line in lines))


def consume(kt, topic: str, n: int, *args: str, timeout_ms: int = 15000) -> list[str]:
    r = kt("kafka-console-consumer", "--topic", topic, "--max-messages", str(n), "--timeout-ms", str(timeout_ms),
           *args)
    return r.lines()


def create_for_verifiable_producer(kt, topic: str, partitions: int) -> None:
    """Creates `topic` and returns once every partition's leader answers ListOffsets.

    kafka-verifiable-producer does not retry a failed send, and the tools run in one warm JVM, so
    it can send as soon as kafka-topics returns: on Apache Kafka that is when the controller has
    committed the topic, before the broker has become the partitions' leader (in one run every
    record failed NOT_LEADER_OR_FOLLOWER). kafka-get-offsets asks each partition's leader and
    retries until it answers as leader."""
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", str(partitions))
    offsets = kt("kafka-get-offsets", "--topic", topic).lines()
    assert offsets == [f"{topic}:{p}:0" for p in range(partitions)], offsets


# ---- kafka-topics ----


def test_topics_create_describe_with_configs(kt, topic):
    r = kt("kafka-topics", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1",
           "--config", "cleanup.policy=compact", "--config", "retention.ms=86400000")
    assert r.lines() == [f"Created topic {topic}."]
    lines = kt("kafka-topics", "--describe", "--topic", topic).lines()
    summary = lines[0]
    assert summary.startswith(f"Topic: {topic}\tTopicId: ") and "PartitionCount: 3\tReplicationFactor: 1" in summary
    configs = describe_configs(summary)
    assert configs["cleanup.policy"] == "compact" and configs["retention.ms"] == "86400000"
    # flush.ms and min.insync.replicas are reported differently on purpose (docs/DESIGN.md)
    assert set(configs) - {"flush.ms", "min.insync.replicas"} == {"cleanup.policy", "retention.ms"}
    assert [[c.strip() for c in line.split("\t")] for line in lines[1:]] == [
        [f"Topic: {topic}", f"Partition: {p}", "Leader: 1", "Replicas: 1", "Isr: 1", "Elr:", "LastKnownElr:"]
        for p in range(3)]


def test_topics_create_existing_and_if_not_exists(kt, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "1")
    again = kt("kafka-topics", "--create", "--topic", topic, "--partitions", "1", expect=1)
    assert again.lines() == [f"Error while executing topic command : Topic '{topic}' already exists."]
    quiet = kt("kafka-topics", "--create", "--topic", topic, "--partitions", "1", "--if-not-exists")
    assert quiet.lines() == []


def test_topics_alter_partitions(kt, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "2")
    kt("kafka-topics", "--alter", "--topic", topic, "--partitions", "5")
    assert "PartitionCount: 5" in kt("kafka-topics", "--describe", "--topic", topic).lines()[0]
    fewer = kt("kafka-topics", "--alter", "--topic", topic, "--partitions", "3", expect=1)
    assert fewer.lines() == [f"Error while executing topic command : The topic {topic} currently has 5 "
                             "partition(s); 3 would not be an increase."]


def test_topics_refused_configs_and_replication(kt, topic):
    bad = kt("kafka-topics", "--create", "--topic", topic, "--config", "cleanup.policy=bogus", expect=1)
    assert bad.lines() == ["Error while executing topic command : Invalid value bogus for configuration "
                           "cleanup.policy: String must be one of: compact, delete"]
    unknown = kt("kafka-topics", "--create", "--topic", topic, "--config", "no.such.config=1", expect=1)
    assert unknown.lines() == ["Error while executing topic command : Unknown topic config name: no.such.config"]
    rf = kt("kafka-topics", "--create", "--topic", topic, "--replication-factor", "3", expect=1)
    assert rf.lines() == [
        "Error while executing topic command : Unable to replicate the partition 3 time(s): The target "
        "replication factor of 3 cannot be reached because only 1 broker(s) are registered or some brokers "
        "have all their log directories cordoned."]
    assert topic not in kt("kafka-topics", "--list").lines()


def test_topics_list_overrides_and_delete(kt, topic):
    plain, custom = f"{topic}-plain", f"{topic}-custom"
    kt("kafka-topics", "--create", "--topic", plain)
    kt("kafka-topics", "--create", "--topic", custom, "--config", "max.message.bytes=200000")
    listed = kt("kafka-topics", "--list", "--exclude-internal").lines()
    assert {plain, custom} <= set(listed) and not any(t.startswith("__") for t in listed)
    overrides = {line.split("\t")[0].removeprefix("Topic: "): describe_configs(line)
                 for line in kt("kafka-topics", "--describe", "--topics-with-overrides").lines()
                 if line.startswith("Topic: ")}
    assert overrides[custom]["max.message.bytes"] == "200000"
    # a topic without overrides is listed only for the keys docs/DESIGN.md says are reported differently
    assert set(overrides.get(plain, {})) <= {"flush.ms", "min.insync.replicas"}
    kt("kafka-topics", "--delete", "--topic", custom)
    wait_until(lambda: custom not in kt("kafka-topics", "--list").lines(), what="topic gone from the list")
    gone = kt("kafka-topics", "--describe", "--topic", custom, expect=1)
    assert gone.lines() == [f"Error while executing topic command : Topic '{custom}' does not exist as expected"]
    missing = kt("kafka-topics", "--delete", "--topic", custom, expect=1)
    assert missing.lines() == [f"Error while executing topic command : Topic '{custom}' does not exist as expected"]


# ---- console producer and consumer ----


def test_console_producer_keys_headers_consumer_prints_them(kt, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "1")
    produce(kt, topic, ["h1:v1,h2:v2\tk1:hello", "h3:x\tk2:world", "h4:y\tk1:again"],
            "--reader-property", "parse.key=true", "--reader-property", "key.separator=:",
            "--reader-property", "parse.headers=true", "--command-property", "acks=all")
    out = consume(kt, topic, 3, "--from-beginning", "--formatter-property", "print.key=true",
                  "--formatter-property", "print.headers=true", "--formatter-property", "print.partition=true",
                  "--formatter-property", "print.offset=true")
    assert out == ["Partition:0\tOffset:0\th1:v1,h2:v2\tk1\thello", "Partition:0\tOffset:1\th3:x\tk2\tworld",
                   "Partition:0\tOffset:2\th4:y\tk1\tagain"]


def test_console_consumer_from_partition_and_offset(kt, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "2")
    produce(kt, topic, [f"{i}" for i in range(10)], "--reader-property", "parse.key=false",
            "--command-property", "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner")
    p1 = consume(kt, topic, 10, "--partition", "1", "--offset", "2", timeout_ms=3000)
    p0 = consume(kt, topic, 10, "--partition", "0", "--offset", "earliest", timeout_ms=3000)
    assert len(p0) + len(p1) + 2 == 10 and sorted(p0 + p1, key=int) == [v for v in map(str, range(10))
                                                                       if v in p0 + p1]


def test_console_producer_compression_and_acks(kt, topic):
    values = [f"value-{i:04d}-" + "x" * 50 for i in range(200)]
    produce(kt, topic, values, "--compression-codec", "zstd", "--request-required-acks", "-1",
            "--batch-size", "50")
    assert consume(kt, topic, 200, "--from-beginning") == values


def test_console_consumer_isolation_levels(kt, bs, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "1")
    produce(kt, topic, ["committed-1", "committed-2"])
    with open_transaction(bs, topic, ["open-1", "open-2"]):
        uncommitted = consume(kt, topic, 4, "--from-beginning", "--isolation-level", "read_uncommitted")
        committed = consume(kt, topic, 4, "--from-beginning", "--isolation-level", "read_committed",
                            timeout_ms=3000)
    assert uncommitted == ["committed-1", "committed-2", "open-1", "open-2"]
    assert committed == ["committed-1", "committed-2"]


def test_console_consumer_group_commits(kt, topic, group):
    produce(kt, topic, ["a", "b", "c"])
    assert consume(kt, topic, 3, "--from-beginning", "--group", group) == ["a", "b", "c"]
    produce(kt, topic, ["d"])
    # the group's commit: a second run with the same group goes on after "c"
    assert consume(kt, topic, 1, "--group", group) == ["d"]


def test_console_consumer_kip848_group(kt, topic, group):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "3")
    produce(kt, topic, [f"m{i}" for i in range(9)])
    out = consume(kt, topic, 9, "--from-beginning", "--group", group,
                  "--command-property", "group.protocol=consumer")
    assert sorted(out) == [f"m{i}" for i in range(9)]
    rows = table(kt("kafka-consumer-groups", "--describe", "--group", group).lines(), "GROUP")
    assert sorted((r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in rows) == [
        (str(p), o, "0") for p, o in enumerate(
            [r["LOG-END-OFFSET"] for r in sorted(rows, key=lambda r: r["PARTITION"])])]


# ---- kafka-consumer-groups ----


def _group_with_offsets(kt, topic: str, group: str, n: int = 6) -> None:
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "2")
    produce(kt, topic, [f"{i % 2}:v{i}" for i in range(n)], "--reader-property", "parse.key=true",
            "--reader-property", "key.separator=:")
    consume(kt, topic, n, "--from-beginning", "--group", group)


def test_groups_describe_empty_group_offsets(kt, topic, group):
    _group_with_offsets(kt, topic, group)
    r = kt("kafka-consumer-groups", "--describe", "--group", group)
    assert f"Consumer group '{group}' has no active members." in r.stderr
    rows = table(r.lines(), "GROUP")
    assert len(rows) == 2 and all(
        row["GROUP"] == group and row["TOPIC"] == topic and row["CURRENT-OFFSET"] == row["LOG-END-OFFSET"]
        and row["LAG"] == "0" and row["CONSUMER-ID"] == "-" for row in rows)
    assert sum(int(row["LOG-END-OFFSET"]) for row in rows) == 6


def test_groups_describe_active_member_state_and_members(kt, bs, topic, group):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "2")
    with active_consumer(bs, group, topic):
        state = table(kt("kafka-consumer-groups", "--describe", "--group", group, "--state").lines(), "GROUP")
        assert [(s["GROUP"], s["ASSIGNMENT-STRATEGY"], s["STATE"], s["#MEMBERS"]) for s in state] == [
            (group, "range", "Stable", "1")]
        assert state[0]["COORDINATOR"].endswith(f":{bs.rsplit(':', 1)[1]}")
        members = table(kt("kafka-consumer-groups", "--describe", "--group", group, "--members",
                           "--verbose").lines(), "GROUP")
        assert len(members) == 1 and members[0]["CLIENT-ID"] == "tools-member"
        assert members[0]["#PARTITIONS"] == "2" and members[0]["CONSUMER-ID"].startswith("tools-member-")
        assert members[0]["HOST"] == "/127.0.0.1"
        refused = kt("kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
                     "--to-earliest", "--execute")
        assert (f"Error: Assignments can only be reset if the group '{group}' is inactive, but the current "
                "state is Stable.") in refused.lines()
        busy = kt("kafka-consumer-groups", "--delete", "--group", group)
        assert busy.lines() == ["Error: Deletion of some consumer groups failed:",
                                f"* Group '{group}' could not be deleted due to: org.apache.kafka.common."
                                "errors.GroupNotEmptyException: The group is not empty."]
        listed = table(kt("kafka-consumer-groups", "--list", "--state").lines(), "GROUP")
        assert {"GROUP": group, "STATE": "Stable"} in listed


def test_groups_reset_offsets(kt, topic, group):
    _group_with_offsets(kt, topic, group)
    dry = table(kt("kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", f"{topic}:0",
                   "--to-offset", "1", "--dry-run").lines(), "GROUP")
    assert dry == [{"GROUP": group, "TOPIC": topic, "PARTITION": "0", "NEW-OFFSET": "1"}]
    done = table(kt("kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
                    "--to-earliest", "--execute").lines(), "GROUP")
    assert sorted((r["PARTITION"], r["NEW-OFFSET"]) for r in done) == [("0", "0"), ("1", "0")]
    shifted = table(kt("kafka-consumer-groups", "--reset-offsets", "--group", group, "--all-topics",
                       "--shift-by", "2", "--execute").lines(), "GROUP")
    assert sorted((r["PARTITION"], r["NEW-OFFSET"]) for r in shifted) == [("0", "2"), ("1", "2")]
    rows = table(kt("kafka-consumer-groups", "--describe", "--group", group, "--offsets").lines(), "GROUP")
    assert all(r["CURRENT-OFFSET"] == "2" and int(r["LAG"]) == int(r["LOG-END-OFFSET"]) - 2 for r in rows)
    # by time: a date before every record resets to the start
    dated = table(kt("kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
                     "--to-datetime", "2020-01-01T00:00:00.000", "--execute").lines(), "GROUP")
    assert sorted((r["PARTITION"], r["NEW-OFFSET"]) for r in dated) == [("0", "0"), ("1", "0")]
    latest = table(kt("kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
                      "--to-latest", "--execute").lines(), "GROUP")
    assert sum(int(r["NEW-OFFSET"]) for r in latest) == 6


def test_groups_delete_offsets(kt, topic, group):
    _group_with_offsets(kt, topic, group)
    r = kt("kafka-consumer-groups", "--delete-offsets", "--group", group, "--topic", f"{topic}:1")
    assert [line.split() for line in r.lines()] == [
        f"Request succeeded for deleting offsets from group {group}.".split(), ["TOPIC", "PARTITION", "STATUS"],
        [topic, "1", "Successful"]]
    rows = table(kt("kafka-consumer-groups", "--describe", "--group", group).lines(), "GROUP")
    assert [r["PARTITION"] for r in rows] == ["0"]
    # a partition the topic does not have
    missing = kt("kafka-consumer-groups", "--delete-offsets", "--group", group, "--topic", f"{topic}:7")
    assert missing.lines()[0] == "Error: Encountered some partition-level error, see the follow-up details."
    assert missing.lines()[-1].split(None, 2)[2] == (
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host "
        "this topic-partition.")


def test_groups_delete(kt, topic, group):
    _group_with_offsets(kt, topic, group)
    assert kt("kafka-consumer-groups", "--delete", "--group", group).lines() == [
        f"Deletion of requested consumer groups ('{group}') was successful."]
    gone = kt("kafka-consumer-groups", "--describe", "--group", group)
    assert gone.lines() == [f"Error: Executing consumer group command failed due to org.apache.kafka.common."
                            f"errors.GroupIdNotFoundException: Group {group} not found."]
    assert group not in kt("kafka-consumer-groups", "--list").lines()
    nosuch = kt("kafka-consumer-groups", "--delete", "--group", group)
    assert nosuch.lines() == ["Error: Deletion of some consumer groups failed:",
                              f"* Group '{group}' could not be deleted due to: org.apache.kafka.common.errors."
                              "GroupIdNotFoundException: The group id does not exist."]


def test_groups_list_by_type_kip848_member(kt, bs, topic, group):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "2")
    with active_consumer(bs, group, topic, protocol="consumer"):
        listed = table(kt("kafka-consumer-groups", "--list", "--type").lines(), "GROUP")
        assert {"GROUP": group, "TYPE": "Consumer"} in listed
        members = table(kt("kafka-consumer-groups", "--describe", "--group", group, "--members",
                           "--verbose").lines(), "GROUP")
        assert len(members) == 1
        m = members[0]
        assert m["#PARTITIONS"] == "2" and m["CURRENT-EPOCH"] == m["TARGET-EPOCH"]
        assert m["CURRENT-ASSIGNMENT"] == m["TARGET-ASSIGNMENT"] == f"{topic}:0,1"
        state = table(kt("kafka-consumer-groups", "--describe", "--group", group, "--state").lines(), "GROUP")
        assert [(s["ASSIGNMENT-STRATEGY"], s["STATE"], s["#MEMBERS"]) for s in state] == [
            ("uniform", "Stable", "1")]


def test_groups_command_via_kafka_groups(kt, topic, group):
    _group_with_offsets(kt, topic, group)
    rows = table(kt("kafka-groups", "--list").lines(), "GROUP")
    assert {"GROUP": group, "TYPE": "Classic", "PROTOCOL": "consumer"} in rows


# ---- kafka-transactions ----


def test_transactions_list_describe_producers(kt, bs, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "1")
    produce(kt, topic, ["before"])
    with open_transaction(bs, topic, ["t1", "t2"]) as txn_id:
        listed = table(kt("kafka-transactions", "list").lines(), "TransactionalId")
        mine = [r for r in listed if r["TransactionalId"] == txn_id]
        assert len(mine) == 1 and mine[0]["TransactionState"] == "Ongoing" and mine[0]["Coordinator"] == "1"
        desc = kt("kafka-transactions", "describe", "--transactional-id", txn_id).lines()
        header, row = cells(desc[0]), cells(desc[1])
        assert header == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                          "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                          "TopicPartitions"]
        d = dict(zip(header, row))
        assert d["TransactionalId"] == txn_id and d["TransactionState"] == "Ongoing"
        assert d["TransactionTimeoutMs"] == "120000" and d["TopicPartitions"] == f"{topic}-0"
        producers = kt("kafka-transactions", "describe-producers", "--topic", topic, "--partition", "0").lines()
        states = [dict(zip(cells(producers[0]), cells(line))) for line in producers[1:]]
        open_ones = [s for s in states if s["ProducerId"] == d["ProducerId"]]
        assert len(open_ones) == 1 and open_ones[0]["CurrentTransactionStartOffset"] == "1"
        assert open_ones[0]["ProducerEpoch"] == d["ProducerEpoch"]


def test_transactions_find_hanging_and_abort(kt, bs, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "1")
    with open_transaction(bs, topic, ["x1", "x2"]):
        # an open transaction the coordinator knows of is not hanging, however old
        hanging = kt("kafka-transactions", "find-hanging", "--broker-id", "1",
                     "--max-transaction-timeout", "0").lines()
        assert cells(hanging[0]) == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                                          "StartOffset", "LastTimestamp", "Duration(min)"]
        assert hanging[1:] == []
        assert consume(kt, topic, 2, "--from-beginning", "--isolation-level", "read_committed",
                       timeout_ms=2000) == []
        # the operator's way out: abort the partition's open transaction from its start offset
        kt("kafka-transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
        producers = kt("kafka-transactions", "describe-producers", "--topic", topic, "--partition", "0").lines()
        assert all(cells(line)[-1] == "None" for line in producers[1:]), producers
        produce(kt, topic, ["after"])
        assert consume(kt, topic, 1, "--from-beginning", "--isolation-level", "read_committed") == ["after"]


# ---- kafka-configs ----


def test_configs_topic_alter_describe_delete(kt, topic):
    kt("kafka-topics", "--create", "--topic", topic)
    r = kt("kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", topic,
           "--add-config", "retention.ms=3600000,max.message.bytes=64000,cleanup.policy=[compact,delete]")
    assert r.lines() == [f"Completed updating config for topic {topic}."]
    desc = kt("kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", topic).lines()
    assert desc[0] == f"Dynamic configs for topic {topic} are:"
    entries = {line.split("=", 1)[0]: line for line in desc[1:]}
    assert entries["retention.ms"] == ("retention.ms=3600000 sensitive=false "
                                       "synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}")
    assert entries["cleanup.policy"].startswith("cleanup.policy=compact,delete sensitive=false")
    assert "max.message.bytes" in entries
    kt("kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", topic,
       "--delete-config", "retention.ms")
    after = kt("kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", topic).lines()
    assert not any(line.startswith("retention.ms=") for line in after[1:])
    assert any(line.startswith("max.message.bytes=64000") for line in after[1:])


def test_configs_topic_describe_all_and_refusals(kt, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--config", "segment.bytes=1048576")
    everything = kt("kafka-configs", "--describe", "--all", "--entity-type", "topics", "--entity-name",
                    topic).lines()
    assert everything[0] == f"All configs for topic {topic} are:"
    by_name = {line.split("=", 1)[0]: line for line in everything[1:]}
    assert by_name["segment.bytes"] == ("segment.bytes=1048576 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
                                        "segment.bytes=1048576, DEFAULT_CONFIG:log.segment.bytes=1073741824}")
    assert by_name["cleanup.policy"] == "cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:" \
                                        "log.cleanup.policy=delete}"
    bad = kt("kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", topic,
             "--add-config", "retention.ms=soon", expect=1)
    assert "Invalid value soon for configuration retention.ms: Not a number of type LONG" in bad.stdout + bad.stderr
    missing = kt("kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", f"{topic}-none",
                 "--add-config", "retention.ms=1000", expect=1)
    assert "UnknownTopicOrPartitionException" in missing.stdout + missing.stderr


def test_configs_internal_topics(kt, bs, topic, group):
    # both internal topics exist once a group has committed and a transactional producer started
    _group_with_offsets(kt, topic, group, n=2)
    with open_transaction(bs, topic, ["t"]):
        pass

    def dynamic(name: str) -> dict[str, str]:
        lines = kt("kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", name).lines()
        assert lines[0] == f"Dynamic configs for topic {name} are:"
        return {line.split("=", 1)[0]: line.split(" sensitive=")[0].split("=", 1)[1] for line in lines[1:]}

    offsets = dynamic("__consumer_offsets")
    assert {k: offsets[k] for k in ("cleanup.policy", "compression.type", "segment.bytes")} == {
        "cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}
    state = dynamic("__transaction_state")
    # min.insync.replicas: reported differently on purpose (docs/DESIGN.md)
    assert {k: v for k, v in state.items() if k != "min.insync.replicas"} == {
        "cleanup.policy": "compact", "compression.type": "uncompressed", "segment.bytes": "104857600",
        "unclean.leader.election.enable": "false"}


def test_configs_broker_describe(kt):
    desc = kt("kafka-configs", "--describe", "--entity-type", "brokers", "--entity-name", "1", "--all").lines()
    assert desc[0] == "All configs for broker 1 are:"
    by_name = {line.split("=", 1)[0]: line for line in desc[1:]}
    assert by_name["num.partitions"].startswith("num.partitions=1 sensitive=false synonyms={")
    assert by_name["authorizer.class.name"].startswith(
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer sensitive=false")
    assert by_name["log.cleanup.policy"] == ("log.cleanup.policy=delete sensitive=false "
                                             "synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}")


def test_configs_group_share_keys(kt, group):
    r = kt("kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", group,
           "--add-config", "share.auto.offset.reset=earliest,share.record.lock.duration.ms=45000")
    assert r.lines() == [f"Completed updating config for group {group}."]
    desc = kt("kafka-configs", "--describe", "--entity-type", "groups", "--entity-name", group).lines()
    assert desc[0] == f"Dynamic configs for group {group} are:"
    # the synonyms are checked in test_tools_new_apis.py with the GROUP configs
    assert [line.split(" synonyms=")[0] for line in desc[1:]] == [
        "share.auto.offset.reset=earliest sensitive=false", "share.record.lock.duration.ms=45000 sensitive=false"]
    bad = kt("kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", group,
             "--add-config", "share.auto.offset.reset=sometime", expect=1)
    assert "share.auto.offset.reset" in bad.stdout + bad.stderr


def test_configs_user_scram_credentials(kt, tmp_path):
    user = f"alice-{uuid.uuid4().hex[:6]}"
    r = kt("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", user,
           "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")
    assert r.lines() == [f"Completed updating config for user {user}."]
    kt("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", user,
       "--add-config", "SCRAM-SHA-512=[password=s2]")
    twice = kt("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", user,
               "--add-config", "SCRAM-SHA-256=[password=a],SCRAM-SHA-512=[password=b]", expect=1)
    assert ("DuplicateResourceException: A user credential cannot be altered twice in the same request"
            in twice.stderr)
    r = kt("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", user,
           "--delete-config", "SCRAM-SHA-512")
    assert r.lines() == [f"Completed updating config for user {user}."]
    nothing = kt("kafka-configs", "--alter", "--entity-type", "users", "--entity-name", user,
                 "--delete-config", "SCRAM-SHA-512", expect=1)
    assert ("ResourceNotFoundException: Attempt to delete a user credential that does not exist"
            in nothing.stderr)


# ---- kafka-acls ----


def test_acls_add_list_remove(kt, topic):
    principal = f"User:bob-{uuid.uuid4().hex[:6]}"
    added = kt("kafka-acls", "--add", "--allow-principal", principal, "--operation", "Read", "--operation",
               "Describe", "--topic", topic, "--allow-host", "*")
    assert f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)`:" \
           in added.lines()

    def listed() -> list[str]:
        return [line for line in kt("kafka-acls", "--list", "--topic", topic).lines()
                if line.startswith("(principal=")]

    acls = wait_until(lambda: len(listed()) == 2 and listed(), what="two ACLs listed")
    assert sorted(acls) == sorted(f"(principal={principal}, host=*, operation={op}, permissionType=ALLOW)"
                                  for op in ("READ", "DESCRIBE"))
    by_principal = kt("kafka-acls", "--list", "--principal", principal).lines()
    assert by_principal[:2] == [f"ACLs for principal `{principal}`", "Current ACLs for resource `ResourcePattern("
                                f"resourceType=TOPIC, name={topic}, patternType=LITERAL)`:"]
    assert sorted(by_principal[2:]) == sorted(acls)
    kt("kafka-acls", "--remove", "--allow-principal", principal, "--operation", "Read", "--topic", topic, "--force")
    wait_until(lambda: listed() == [f"(principal={principal}, host=*, operation=DESCRIBE, permissionType=ALLOW)"],
               what="one ACL left")
    kt("kafka-acls", "--remove", "--topic", topic, "--force")
    wait_until(lambda: listed() == [], what="no ACL left")


def test_acls_producer_consumer_convenience_and_prefixed(kt, topic, group):
    principal = f"User:carol-{uuid.uuid4().hex[:6]}"
    kt("kafka-acls", "--add", "--allow-principal", principal, "--producer", "--topic", topic,
       "--resource-pattern-type", "prefixed")
    kt("kafka-acls", "--add", "--allow-principal", principal, "--consumer", "--topic", topic, "--group", group)

    def ops() -> set[tuple[str, str]]:
        out = kt("kafka-acls", "--list", "--principal", principal).lines()
        found, resource = set(), ""
        for line in out:
            if m := re.search(r"resourceType=(\w+), name=([^,]+), patternType=(\w+)", line):
                resource = f"{m[1]}:{m[2]}:{m[3]}"
            elif m := re.search(r"operation=(\w+)", line):
                found.add((resource, m[1]))
        return found

    want = {(f"TOPIC:{topic}:PREFIXED", "WRITE"), (f"TOPIC:{topic}:PREFIXED", "DESCRIBE"),
            (f"TOPIC:{topic}:PREFIXED", "CREATE"), (f"TOPIC:{topic}:LITERAL", "READ"),
            (f"TOPIC:{topic}:LITERAL", "DESCRIBE"), (f"GROUP:{group}:LITERAL", "READ")}
    wait_until(lambda: ops() == want, timeout=15, what=f"ACLs {want}")
    # removal names the ACLs as they were added (a principal alone filters on operation All)
    kt("kafka-acls", "--remove", "--allow-principal", principal, "--producer", "--force", "--topic", topic,
       "--resource-pattern-type", "prefixed")
    kt("kafka-acls", "--remove", "--allow-principal", principal, "--consumer", "--force", "--topic", topic,
       "--group", group)
    wait_until(lambda: ops() == set(), what="ACLs removed")


def test_acls_deny_takes_effect_on_console_clients(kt, topic):
    produce(kt, topic, ["secret"])
    kt("kafka-acls", "--add", "--deny-principal", "User:ANONYMOUS", "--operation", "Read", "--operation", "Write",
       "--topic", topic)
    try:
        def refused() -> bool:
            r = kt("kafka-console-producer", "--topic", topic, "--command-property", "delivery.timeout.ms=5000",
                   "--command-property", "request.timeout.ms=4000", stdin="denied\n", expect=None)
            return f"Not authorized to access topics: [{topic}]" in r.stderr
        wait_until(refused, timeout=30, interval=0.5, what="the console producer refused")
        r = kt("kafka-console-consumer", "--topic", topic, "--partition", "0", "--offset", "earliest",
               "--max-messages", "1", "--timeout-ms", "5000")
        assert r.lines() == [] and f"Not authorized to access topics: [{topic}]" in r.stderr
    finally:
        kt("kafka-acls", "--remove", "--topic", topic, "--force")
    wait_until(lambda: consume(kt, topic, 2, "--from-beginning", timeout_ms=5000) == ["secret"], timeout=30,
               what="reading again once the ACL is gone")


# ---- kafka-get-offsets, kafka-delete-records, kafka-log-dirs ----


def test_get_offsets_latest_earliest_by_time(kt, bs, topic):
    from confluent_kafka import Producer

    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "2")
    producer = Producer({"bootstrap.servers": bs})
    base = int(time.time() * 1000) - 60_000
    for i, ts in enumerate([base, base + 300, base + 300, base + 200]):
        producer.produce(topic, value=f"p0-{i}".encode(), partition=0, timestamp=ts)
    producer.produce(topic, value=b"p1-0", partition=1, timestamp=base + 100)
    producer.flush(30)
    assert kt("kafka-get-offsets", "--topic", topic).lines() == [f"{topic}:0:4", f"{topic}:1:1"]
    assert kt("kafka-get-offsets", "--topic", topic, "--time", "-2").lines() == [f"{topic}:0:0", f"{topic}:1:0"]
    assert kt("kafka-get-offsets", "--topic", topic, "--time", "earliest").lines() == [
        f"{topic}:0:0", f"{topic}:1:0"]
    # the first record with the largest timestamp
    assert kt("kafka-get-offsets", "--topic", topic, "--time", "-3").lines() == [f"{topic}:0:1", f"{topic}:1:0"]
    # by time: the first offset whose timestamp is at or after it; none after the newest
    assert kt("kafka-get-offsets", "--topic", topic, "--time", str(base + 150)).lines() == [f"{topic}:0:1"]
    assert kt("kafka-get-offsets", "--topic", topic, "--time", str(base + 1000)).lines() == []
    assert kt("kafka-get-offsets", "--topic-partitions", f"{topic}:1").lines() == [f"{topic}:1:1"]
    assert kt("kafka-get-offsets", "--topic", re.escape(topic[:-3]) + ".*", "--partitions", "0").lines() == [
        f"{topic}:0:4"]
    none = kt("kafka-get-offsets", "--topic", f"{topic}-none", expect=1)
    assert none.tool_stderr() == "Error occurred: Could not match any topic-partitions with the specified filters"


def test_delete_records(kt, topic, tmp_path):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "2")
    produce(kt, topic, [f"{p}:v{i}" for i in range(5) for p in (0, 1)], "--reader-property", "parse.key=true",
            "--reader-property", "key.separator=:",
            "--command-property", "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner")
    spec = tmp_path / "delete.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 3},
                                                             {"topic": topic, "partition": 1, "offset": -1}]}))
    r = kt("kafka-delete-records", "--offset-json-file", str(spec))
    assert r.lines()[:2] == ["Executing records delete operation", "Records delete operation completed:"]
    assert sorted(r.lines()[2:]) == [f"partition: {topic}-0\tlow_watermark: 3",
                                     f"partition: {topic}-1\tlow_watermark: 5"]
    assert kt("kafka-get-offsets", "--topic", topic, "--time", "-2").lines() == [f"{topic}:0:3", f"{topic}:1:5"]
    assert len(consume(kt, topic, 10, "--from-beginning", timeout_ms=3000)) == 2
    beyond = tmp_path / "beyond.json"
    beyond.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 99}]}))
    r = kt("kafka-delete-records", "--offset-json-file", str(beyond))
    assert r.lines()[2] == (f"partition: {topic}-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
                            "The requested offset is not within the range of offsets maintained by the server.")


def test_log_dirs_describe(kt, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "2")
    produce(kt, topic, ["a", "b", "c"])
    r = kt("kafka-log-dirs", "--describe", "--topic-list", topic)
    assert r.lines()[:2] == ["Querying brokers for log directories information",
                             "Received log directory information from brokers 1"]
    report = json.loads(r.lines()[2])
    assert report["version"] == 1 and [b["broker"] for b in report["brokers"]] == [1]
    (log_dir,) = report["brokers"][0]["logDirs"]
    assert log_dir["error"] is None and log_dir["logDir"]
    parts = {p["partition"]: p for p in log_dir["partitions"]}
    assert set(parts) == {f"{topic}-0", f"{topic}-1"}
    assert sum(p["size"] for p in parts.values()) > 0
    assert all(p["offsetLag"] == 0 and p["isFuture"] is False for p in parts.values())
    one = json.loads(kt("kafka-log-dirs", "--describe", "--broker-list", "1", "--topic-list", topic).lines()[2])
    assert one["brokers"][0]["logDirs"][0]["partitions"] == log_dir["partitions"]


def test_broker_api_versions(kt, bs):
    out = kt("kafka-broker-api-versions").lines()
    assert out[0] == f"{bs} (id: 1 rack: null isFenced: false) -> ("
    usable = {m[1] for line in out if (m := re.match(r"(\w+)\(\d+\): .*\[usable: \d+\]", line))}
    assert {"Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "FindCoordinator", "JoinGroup",
            "DescribeConfigs", "IncrementalAlterConfigs", "CreateTopics", "DeleteRecords", "DescribeLogDirs",
            "DescribeProducers", "DescribeTransactions", "ListTransactions", "ConsumerGroupHeartbeat",
            "ShareGroupHeartbeat", "StreamsGroupHeartbeat", "DescribeTopicPartitions"} <= usable


# ---- share and streams groups ----


def test_share_groups_console_share_consumer_describe_reset_delete(kt, topic, group):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "1")
    kt("kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", group,
       "--add-config", "share.auto.offset.reset=earliest")
    produce(kt, topic, ["s1", "s2", "s3"])
    got = kt("kafka-console-share-consumer", "--topic", topic, "--group", group, "--max-messages", "3",
             "--timeout-ms", "20000").lines()
    assert sorted(got) == ["s1", "s2", "s3"]
    assert group in kt("kafka-share-groups", "--list").lines()

    def offsets() -> list[dict[str, str]]:
        return table(kt("kafka-share-groups", "--describe", "--group", group).lines(), "GROUP")

    # the lag; the start offset may be the last persisted one on Kafka (docs/DESIGN.md)
    rows = wait_until(lambda: [r for r in offsets() if r.get("LAG") == "0"], timeout=15,
                      what="the share-partition's lag at 0")
    assert rows[0]["TOPIC"] == topic and rows[0]["PARTITION"] == "0"
    state = table(kt("kafka-share-groups", "--describe", "--group", group, "--state").lines(), "GROUP")
    assert [(s["STATE"], s["#MEMBERS"]) for s in state] == [("Empty", "0")]
    reset = table(kt("kafka-share-groups", "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest",
                     "--execute").lines(), "GROUP")
    assert [(r["TOPIC"], r["PARTITION"], r["NEW-OFFSET"]) for r in reset] == [(topic, "0", "0")]
    wait_until(lambda: [r for r in offsets() if r.get("START-OFFSET") == "0" and r.get("LAG") == "3"], timeout=15,
               what="the start offset back at 0")
    deleted = kt("kafka-share-groups", "--delete", "--group", group)
    assert deleted.lines() == [f"Deletion of requested share groups ('{group}') was successful."]
    assert group not in kt("kafka-share-groups", "--list").lines()


def test_streams_groups_list_describe_delete(kt, bs, topic):
    from compat_tests.test_streams_groups import heartbeat, join_until_assigned, wait_coordinator
    from kafkalite.protocol.client import WireClient

    app = f"tools-app-{uuid.uuid4().hex[:6]}"
    source = f"{app}-input"
    kt("kafka-topics", "--create", "--topic", source, "--partitions", "2")
    member = str(uuid.uuid4())

    def state() -> list[str]:
        # GROUP COORDINATOR (ID) [ASSIGNOR] STATE #MEMBERS: the assignor needs StreamsGroupDescribe v1
        row = [line for line in kt("kafka-streams-groups", "--describe", "--group", app, "--state").lines()
               if line.startswith(app)]
        return row[0].split()[-2:]

    with WireClient(bs) as c:
        wait_coordinator(c, app)
        join_until_assigned(c, app, source, member)
        assert {"GROUP": app, "STATE": "Stable"} in table(kt("kafka-streams-groups", "--list", "--state").lines(),
                                                          "GROUP")
        members = kt("kafka-streams-groups", "--describe", "--group", app, "--members").lines()
        assert members[0].split() == ["GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"]
        assert members[1].split() == [app, member, "process-1", "kafkalite-wire", "ACTIVE:", "0:[0,1];", "1:[0,1];"]
        lags = table(kt("kafka-streams-groups", "--describe", "--group", app).lines(), "GROUP")
        assert sorted((r["TOPIC"], r["PARTITION"], r["OFFSET-LAG"]) for r in lags) == [
            (source, "0", "0"), (source, "1", "0"), (f"{app}-rekey-repartition", "0", "0"),
            (f"{app}-rekey-repartition", "1", "0")]
        assert state() == ["Stable", "1"]
        busy = kt("kafka-streams-groups", "--delete", "--group", app)
        assert busy.lines() == ["Error: Deletion of some streams groups failed:",
                                f"* Group '{app}' could not be deleted due to: org.apache.kafka.common.errors."
                                f"GroupNotEmptyException: Streams group '{app}' is not EMPTY."]
        heartbeat(c, app, member, -1)
    assert state() == ["Empty", "0"]
    deleted = kt("kafka-streams-groups", "--delete", "--group", app)
    assert deleted.lines() == [f"Deletion of requested streams groups ('{app}') was successful."]
    assert app not in kt("kafka-streams-groups", "--list").lines()


# ---- perf tests and the verifiable clients ----


def test_producer_perf_test(kt, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "2")
    r = kt("kafka-producer-perf-test", "--topic", topic, "--num-records", "3000", "--record-size", "100",
           "--throughput", "-1", "--command-property", "acks=all", "--command-property", "linger.ms=5",
           "--command-property", "compression.type=lz4")
    summary = r.lines()[-1]
    assert re.match(r"3000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
                    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99.9th\.", summary), summary
    offsets = kt("kafka-get-offsets", "--topic", topic).lines()
    assert sum(int(line.rsplit(":", 1)[1]) for line in offsets) == 3000


def test_producer_perf_test_transactional(kt, topic):
    kt("kafka-topics", "--create", "--topic", topic, "--partitions", "1")
    r = kt("kafka-producer-perf-test", "--topic", topic, "--num-records", "500", "--record-size", "50",
           "--throughput", "-1", "--transactional-id", f"perf-{uuid.uuid4().hex[:6]}",
           "--transaction-duration-ms", "100")
    assert r.lines()[-1].startswith("500 records sent")
    assert len(consume(kt, topic, 500, "--from-beginning", "--isolation-level", "read_committed")) == 500


def test_consumer_perf_test(kt, topic):
    produce(kt, topic, [f"r{i}" for i in range(300)])
    r = kt("kafka-consumer-perf-test", "--topic", topic, "--messages", "300", "--timeout", "20000",
           "--hide-header")
    fields = r.lines()[-1].split(", ")
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, ...
    assert fields[4] == "300", r


def test_verifiable_producer(kt, topic):
    create_for_verifiable_producer(kt, topic, 2)
    r = kt("kafka-verifiable-producer", "--topic", topic, "--max-messages", "50", "--acks", "-1",
           "--value-prefix", "7")
    events = [json.loads(line) for line in r.lines()]
    names = [e["name"] for e in events]
    assert names[0] == "startup_complete" and names[-2:] == ["shutdown_complete", "tool_data"]
    sent = [e for e in events if e["name"] == "producer_send_success"]
    assert len(sent) == 50 and all(e["topic"] == topic and e["value"].startswith("7.") for e in sent)
    assert events[-1]["sent"] == 50 and events[-1]["acked"] == 50
    per_partition: dict[int, list[int]] = {}
    for e in sent:
        per_partition.setdefault(e["partition"], []).append(e["offset"])
    assert all(sorted(o) == list(range(len(o))) for o in per_partition.values())


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_verifiable_consumer(kt, topic, group, protocol):
    create_for_verifiable_producer(kt, topic, 2)
    produced = kt("kafka-verifiable-producer", "--topic", topic, "--max-messages", "40")
    # all 40 written before the consumer waits for them (its wait has no other end than the timeout)
    assert json.loads(produced.lines()[-1])["acked"] == 40, produced.stdout[-2000:]
    r = kt("kafka-verifiable-consumer", "--topic", topic, "--group-id", group, "--group-protocol", protocol,
           "--max-messages", "40", "--reset-policy", "earliest", "--verbose", timeout=120)
    events = [json.loads(line) for line in r.lines()]
    names = [e["name"] for e in events]
    # shutdown_complete when the loop ends, shutdown_requested from the hook at the JVM's exit
    assert names[0] == "startup_complete" and names[-2:] == ["shutdown_complete", "shutdown_requested"]
    assigned = [e for e in events if e["name"] == "partitions_assigned"]
    assert sorted(p["partition"] for e in assigned for p in e["partitions"]) == [0, 1]
    consumed = [e for e in events if e["name"] == "records_consumed"]
    assert sum(e["count"] for e in consumed) == 40
    commits = [e for e in events if e["name"] == "offsets_committed"]
    assert commits and all(c["success"] for c in commits)
    final = {(o["topic"], o["partition"]): o["offset"] for c in commits for o in c["offsets"]}
    assert sum(final.values()) == 40
    rows = table(kt("kafka-consumer-groups", "--describe", "--group", group).lines(), "GROUP")
    assert sorted(int(r["CURRENT-OFFSET"]) for r in rows) == sorted(final.values())


def test_tool_usage_errors(kt):
    r = kt("kafka-topics", "--describe", "--topic", "x", "--bogus-option", expect=1)
    assert r.stdout == "" and r.stderr.startswith("bogus-option is not a recognized option\n")
    r = kt("kafka-consumer-groups", "--describe", expect=1)
    first = r.stderr.splitlines()[0]
    assert first in ("Option [describe] takes one of these options: [group], [all-groups]",
                     "Option [describe] takes one of these options: [all-groups], [group]"), first
