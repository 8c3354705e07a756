"""Admin APIs at the protocol level: CreateTopics, DeleteTopics, CreatePartitions,
DescribeTopicPartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DeleteRecords,
OffsetForLeaderEpoch, DescribeCluster and DescribeLogDirs, including their error paths."""

from __future__ import annotations

import itertools
import sys
import uuid
from pathlib import Path

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkalite.protocol.client import WireClient
from kafkalite.protocol.messages import make
from kafkalite.protocol.records import Record, build_batch
from kafkalite.tests import suite_brokers

E = ErrorCode
ZERO = uuid.UUID(int=0)
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
_names = itertools.count()


def fresh(prefix: str = "t") -> str:
    return f"{prefix}-{next(_names)}-{uuid.uuid4().hex[:6]}"


# --- requests at any version ----------------------------------------------------------------------

def rmod(api_key: int, version: int):
    return sys.modules[load_request_schema(api_key, version).__module__]


def create_topics(wire, *topics, version=7, validate_only=False):
    m = rmod(19, version)
    specs = []
    for t in topics:
        if isinstance(t, str):
            t = {"name": t}
        specs.append(make(
            m.CreatableTopic, name=t["name"], num_partitions=t.get("partitions", -1),
            replication_factor=t.get("rf", -1),
            assignments=tuple(make(m.CreatableReplicaAssignment, partition_index=i, broker_ids=tuple(b))
                              for i, b in t.get("assignments", ())),
            configs=tuple(make(m.CreatableTopicConfig, name=k, value=v) for k, v in t.get("configs", {}).items())))
    return wire.request(make(m.CreateTopicsRequest, topics=tuple(specs), timeout=30_000,
                             validate_only=validate_only)).topics


def create_one(wire, name, **kw):
    version = kw.pop("version", 7)
    validate_only = kw.pop("validate_only", False)
    return create_topics(wire, {"name": name, **kw}, version=version, validate_only=validate_only)[0]


def delete_topics(wire, *names, ids=(), version=6):
    m = rmod(20, version)
    if version >= 6:
        states = [make(m.DeleteTopicState, name=n, topic_id=ZERO) for n in names]
        states += [make(m.DeleteTopicState, name=n, topic_id=i) for n, i in ids]
        req = make(m.DeleteTopicsRequest, topics=tuple(states), timeout=30_000)
    else:
        req = make(m.DeleteTopicsRequest, topic_names=tuple(names), timeout=30_000)
    return wire.request(req).responses


def create_partitions(wire, name, count, assignments=None, version=3, validate_only=False, extra=()):
    m = rmod(37, version)
    topics = [(name, count, assignments), *extra]
    req = make(m.CreatePartitionsRequest, topics=tuple(
        make(m.CreatePartitionsTopic, name=n, count=c,
             assignments=None if a is None else tuple(make(m.CreatePartitionsAssignment, broker_ids=tuple(b))
                                                      for b in a))
        for n, c, a in topics), timeout=30_000, validate_only=validate_only)
    return wire.request(req).results


def metadata(wire, *names):
    m = rmod(3, 12)
    req = make(m.MetadataRequest, topics=tuple(make(m.MetadataRequestTopic, topic_id=None, name=n) for n in names),
               allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return {t.name: t for t in wire.request(req).topics}


def use_coordinators(wire):
    """FindCoordinator for a group and a transactional id: the coordinators create their internal
    topics on first use (as Kafka does), not at startup."""
    m = rmod(10, 4)
    for key_type in (0, 1):
        (c,) = wire.request(make(m.FindCoordinatorRequest, key_type=key_type, coordinator_keys=("k",))).coordinators
        assert c.error_code == E.none


def partition_count(wire, name):
    t = metadata(wire, name)[name]
    return None if t.error_code != E.none else len(t.partitions)


def describe_configs(wire, *resources, synonyms=False, docs=False, version=4):
    m = rmod(32, version)
    res = tuple(make(m.DescribeConfigsResource, resource_type=r[0], resource_name=r[1],
                     configuration_keys=r[2] if len(r) > 2 else None) for r in resources)
    return wire.request(make(m.DescribeConfigsRequest, resources=res, include_synonyms=synonyms,
                             include_documentation=docs)).results


def topic_configs(wire, name, **kw):
    (res,) = describe_configs(wire, (TOPIC, name), **kw)
    assert res.error_code == E.none, res
    return {c.name: c for c in res.configs}


def alter_configs(wire, *resources, validate_only=False, version=2):
    m = rmod(33, version)
    res = tuple(make(m.AlterConfigsResource, resource_type=rt, resource_name=rn,
                     configs=tuple(make(m.AlterableConfig, name=k, value=v) for k, v in cfg))
                for rt, rn, cfg in resources)
    return wire.request(make(m.AlterConfigsRequest, resources=res, validate_only=validate_only)).responses


def incremental(wire, *resources, validate_only=False, version=1):
    m = rmod(44, version)
    res = tuple(make(m.AlterConfigsResource, resource_type=rt, resource_name=rn,
                     configs=tuple(make(m.AlterableConfig, name=k, config_operation=op, value=v) for k, op, v in ops))
                for rt, rn, ops in resources)
    return wire.request(make(m.IncrementalAlterConfigsRequest, resources=res, validate_only=validate_only)).responses


def incremental_topic(wire, name, *ops, **kw):
    (r,) = incremental(wire, (TOPIC, name, ops), **kw)
    return r


def produce(wire, topic, n, partition=0, per_batch=1):
    m = rmod(0, 9)
    for start in range(0, n, per_batch):
        recs = [Record(key=b"k", value=f"v{i}".encode(), headers=(), timestamp_ms=1_700_000_000_000 + i)
                for i in range(start, min(n, start + per_batch))]
        req = make(m.ProduceRequest, transactional_id=None, acks=-1, timeout=5000, topic_data=(
            make(m.TopicProduceData, name=topic, partition_data=(
                make(m.PartitionProduceData, index=partition, records=bytes(build_batch(recs))),)),))
        resp = wire.request(req).responses[0].partition_responses[0]
        assert resp.error_code == E.none, resp


def produce_error(wire, topic, value: bytes):
    m = rmod(0, 9)
    batch = build_batch([Record(key=None, value=value, headers=(), timestamp_ms=1_700_000_000_000)])
    req = make(m.ProduceRequest, transactional_id=None, acks=-1, timeout=5000, topic_data=(
        make(m.TopicProduceData, name=topic, partition_data=(
            make(m.PartitionProduceData, index=0, records=bytes(batch)),)),))
    return wire.request(req).responses[0].partition_responses[0].error_code


def earliest_offset(wire, topic, partition=0):
    m = rmod(2, 9)
    req = make(m.ListOffsetsRequest, replica_id=-1, isolation_level=0, topics=(
        make(m.ListOffsetsTopic, name=topic, partitions=(
            make(m.ListOffsetsPartition, partition_index=partition, current_leader_epoch=-1, timestamp=-2),)),))
    return wire.request(req).topics[0].partitions[0].offset


def delete_records(wire, topic, *offsets, version=2):
    m = rmod(21, version)
    req = make(m.DeleteRecordsRequest, timeout=5000, topics=(make(m.DeleteRecordsTopic, name=topic, partitions=tuple(
        make(m.DeleteRecordsPartition, partition_index=p, offset=o) for p, o in offsets)),))
    return wire.request(req).topics[0].partitions


def offset_for_epoch(wire, topic, *parts, version=4):
    m = rmod(23, version)
    req = make(m.OffsetForLeaderEpochRequest, replica_id=-1, topics=(make(m.OffsetForLeaderTopic, topic=topic,
               partitions=tuple(make(m.OffsetForLeaderPartition, partition=p, current_leader_epoch=c, leader_epoch=e)
                                for p, c, e in parts)),))
    return wire.request(req).topics[0].partitions


def describe_topic_partitions(wire, *names, limit=2000, cursor=None):
    m = rmod(75, 0)
    req = make(m.DescribeTopicPartitionsRequest, topics=tuple(make(m.TopicRequest, name=n) for n in names),
               response_partition_limit=limit,
               cursor=None if cursor is None else make(m.Cursor, topic_name=cursor[0], partition_index=cursor[1]))
    return wire.request(req)


def describe_cluster(wire, version=2, endpoint=1, ops=False):
    m = rmod(60, version)
    return wire.request(make(m.DescribeClusterRequest, include_cluster_authorized_operations=ops,
                             endpoint_type=endpoint, include_fenced_brokers=True))


def describe_log_dirs(wire, topics=None, version=4):
    m = rmod(35, version)
    req = make(m.DescribeLogDirsRequest, topics=None if topics is None else tuple(
        make(m.DescribableLogDirTopic, topic=t, partitions=tuple(ps)) for t, ps in topics))
    return wire.request(req)


# --- fixtures (`broker` and `wire` come from conftest.py) -----------------------------------------

@pytest.fixture(scope="module")
def configured(tmp_path_factory):
    """A broker with settings that differ from Kafka's defaults."""
    args = ["-c", "num.partitions=3", "-c", "log.retention.ms=1000", "-c", "delete.topic.enable=false",
            "-c", "log.segment.bytes=2097152"]
    with suite_brokers.running(extra_args=args) as b:
        yield b


@pytest.fixture
def cwire(configured):
    with WireClient(configured.bootstrap) as c:
        yield c


# --- CreateTopics -------------------------------------------------------------------------------

def test_create_topic_answers_partitions_replication_id_and_configs(wire):
    name = fresh()
    r = create_one(wire, name, partitions=3, configs={"retention.ms": "12345", "cleanup.policy": "compact, delete"})
    assert r.error_code == E.none and r.error_message is None
    assert r.num_partitions == 3 and r.replication_factor == 1
    assert r.topic_id not in (None, ZERO)
    configs = {c.name: c for c in r.configs}
    assert configs["retention.ms"].value == "12345" and configs["retention.ms"].config_source == TOPIC_CONFIG
    assert configs["cleanup.policy"].value == "compact,delete"
    assert configs["segment.bytes"].value == str(1 << 30) and configs["segment.bytes"].config_source == DEFAULT_CONFIG
    assert not any(c.read_only or c.is_sensitive for c in r.configs)
    md = metadata(wire, name)[name]
    assert md.error_code == E.none and md.topic_id == r.topic_id and len(md.partitions) == 3
    assert topic_configs(wire, name)["retention.ms"].value == "12345"


def test_create_topic_defaults_come_from_broker_settings(cwire):
    name = fresh()
    r = create_one(cwire, name)
    assert r.error_code == E.none and r.num_partitions == 3 and r.replication_factor == 1
    configs = {c.name: c for c in r.configs}
    assert configs["retention.ms"].value == "1000" and configs["retention.ms"].config_source == STATIC_BROKER_CONFIG
    assert partition_count(cwire, name) == 3


@pytest.mark.parametrize("version", [2, 3, 4, 5, 6])
def test_create_topic_older_versions(wire, version):
    name = fresh()
    r = create_one(wire, name, partitions=2, rf=1, version=version)
    assert r.error_code == E.none
    if version >= 5:
        assert r.num_partitions == 2 and r.configs
    assert partition_count(wire, name) == 2
    again = create_one(wire, name, partitions=2, rf=1, version=version)
    assert again.error_code == E.topic_already_exists


def test_create_existing_topic(wire):
    name = fresh()
    assert create_one(wire, name).error_code == E.none
    r = create_one(wire, name)
    assert r.error_code == E.topic_already_exists
    assert r.error_message == f"Topic '{name}' already exists."
    assert r.topic_id in (None, ZERO) and r.num_partitions == -1


@pytest.mark.parametrize("name, message", [
    ("", "Topic name is invalid: the empty string is not allowed"),
    (".", "Topic name is invalid: '.' is not allowed"),
    ("..", "Topic name is invalid: '..' is not allowed"),
    ("bad name", "Topic name is invalid: 'bad name' contains one or more characters other than ASCII "
                 "alphanumerics, '.', '_' and '-'"),
    ("x" * 250, f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed length 249"),
])
def test_create_topic_with_a_bad_name(wire, name, message):
    r = create_one(wire, name)
    assert r.error_code == E.invalid_topic_exception
    assert r.error_message == message


def test_create_topic_colliding_on_dot_and_underscore(wire):
    base = fresh("coll")
    assert create_one(wire, f"{base}.a").error_code == E.none
    r = create_one(wire, f"{base}_a")
    assert r.error_code == E.invalid_topic_exception
    assert r.error_message == f"Topic '{base}_a' collides with existing topic: {base}.a"


@pytest.mark.parametrize("spec, code, message", [
    ({"rf": 3}, E.invalid_replication_factor, "Unable to replicate the partition 3 time(s): The target replication "
                                              "factor of 3 cannot be reached because only 1 broker(s) are registered "
                                              "or some brokers have all their log directories cordoned."),
    ({"rf": 0}, E.invalid_replication_factor, "Replication factor must be larger than 0, or -1 to use the default "
                                              "value."),
    ({"rf": -2}, E.invalid_replication_factor, "Replication factor must be larger than 0, or -1 to use the default "
                                               "value."),
    ({"partitions": 0}, E.invalid_partitions, "Number of partitions was set to an invalid non-positive value."),
    ({"partitions": -5}, E.invalid_partitions, "Number of partitions was set to an invalid non-positive value."),
    ({"configs": {"no.such": "1"}}, E.invalid_config, "Unknown topic config name: no.such"),
    ({"configs": {"retention.ms": "soon"}}, E.invalid_config,
     "Invalid value soon for configuration retention.ms: Not a number of type LONG"),
    ({"configs": {"retention.ms": None}}, E.invalid_config, "Null value not supported for topic configs: retention.ms"),
    ({"configs": {"cleanup.policy": "forever"}}, E.invalid_config,
     "Invalid value forever for configuration cleanup.policy: String must be one of: compact, delete"),
    ({"partitions": 2, "assignments": [(0, [1])]}, E.invalid_request,
     "A manual partition assignment was specified, but numPartitions was not set to -1."),
    ({"rf": 1, "assignments": [(0, [1])]}, E.invalid_request,
     "A manual partition assignment was specified, but replication factor was not set to -1."),
    ({"assignments": [(0, [2])]}, E.invalid_replica_assignment,
     "The manual partition assignment includes broker 2, but no such broker is registered."),
    ({"assignments": [(0, [1, 1])]}, E.invalid_replica_assignment,
     "The manual partition assignment includes the broker 1 more than once."),
    ({"assignments": [(0, [])]}, E.invalid_replica_assignment,
     "The manual partition assignment includes an empty replica list."),
    ({"assignments": [(0, [1]), (2, [1])]}, E.invalid_replica_assignment,
     "partitions should be a consecutive 0-based integer sequence"),
    ({"assignments": [(0, [1]), (0, [1])]}, E.invalid_replica_assignment,
     "Found multiple manual partition assignments for partition 0"),
])
def test_create_topic_errors(wire, spec, code, message):
    name = fresh()
    r = create_one(wire, name, **spec)
    assert (r.error_code, r.error_message) == (code, message)
    assert partition_count(wire, name) is None


def test_config_errors_come_before_partition_errors(wire):
    r = create_one(wire, fresh(), partitions=0, configs={"bogus": "1"})
    assert r.error_code == E.invalid_config


def test_create_topic_with_manual_assignment(wire):
    name = fresh()
    r = create_one(wire, name, assignments=[(1, [1]), (0, [1])])
    assert r.error_code == E.none and r.num_partitions == 2 and r.replication_factor == 1
    assert partition_count(wire, name) == 2


def test_validate_only_creates_nothing(wire):
    name = fresh()
    r = create_one(wire, name, partitions=4, configs={"retention.ms": "5"}, validate_only=True)
    assert r.error_code == E.none and r.num_partitions == 4
    assert {c.name: c.value for c in r.configs}["retention.ms"] == "5"
    assert partition_count(wire, name) is None
    bad = create_one(wire, name, rf=2, validate_only=True)
    assert bad.error_code == E.invalid_replication_factor
    assert create_one(wire, name, partitions=4).error_code == E.none
    assert partition_count(wire, name) == 4


def test_duplicate_names_in_one_request(wire):
    dup, other = fresh(), fresh()
    results = create_topics(wire, dup, other, dup)
    by = {r.name: r for r in results}
    assert len(results) == 2
    assert by[dup].error_code == E.invalid_request and by[dup].error_message == "Duplicate topic name."
    assert by[other].error_code == E.none
    assert partition_count(wire, dup) is None


def test_too_many_partitions_in_one_request(wire):
    a, b = fresh(), fresh()
    results = create_topics(wire, {"name": a, "partitions": 6000}, {"name": b, "partitions": 6000})
    assert {r.error_code for r in results} == {E.policy_violation}
    assert partition_count(wire, a) is None


def test_cluster_metadata_topic_cannot_be_created(wire):
    (r,) = create_topics(wire, "__cluster_metadata")
    assert r.error_code == E.topic_authorization_failed


def test_topic_configs_survive_a_restart(tmp_path):
    name = fresh()
    with suite_brokers.running(data_dir=tmp_path) as b, WireClient(b.bootstrap) as w:
        assert create_one(w, name, configs={"retention.ms": "777"}).error_code == E.none
        assert incremental_topic(w, name, ("cleanup.policy", SET, "compact")).error_code == E.none
    with suite_brokers.running(data_dir=tmp_path) as b, WireClient(b.bootstrap) as w:
        configs = topic_configs(w, name)
        assert configs["retention.ms"].value == "777" and configs["retention.ms"].config_source == TOPIC_CONFIG
        assert configs["cleanup.policy"].value == "compact"


# --- DeleteTopics -------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [1, 3, 5, 6])
def test_delete_topic_by_name(wire, version):
    name = fresh()
    assert create_one(wire, name).error_code == E.none
    (r,) = delete_topics(wire, name, version=version)
    assert r.name == name and r.error_code == E.none
    assert partition_count(wire, name) is None
    (again,) = delete_topics(wire, name, version=version)
    assert again.error_code == E.unknown_topic_or_partition
    # the name can be used again
    assert create_one(wire, name).error_code == E.none


def test_delete_topic_by_id(wire):
    name = fresh()
    topic_id = create_one(wire, name).topic_id
    (r,) = delete_topics(wire, ids=[(None, topic_id)])
    assert (r.name, r.topic_id, r.error_code) == (name, topic_id, E.none)
    assert partition_count(wire, name) is None
    (again,) = delete_topics(wire, ids=[(None, topic_id)])
    assert again.error_code == E.unknown_topic_id and again.topic_id == topic_id and again.name is None


def test_delete_topics_bad_requests(wire):
    name, other = fresh(), fresh()
    topic_id = create_one(wire, name).topic_id
    create_one(wire, other)
    results = delete_topics(wire, other, other, ids=[(name, topic_id), (None, ZERO)])
    by = [(r.name, r.error_code, r.error_message) for r in results]
    assert (other, E.invalid_request, "Duplicate topic name.") in by
    assert (name, E.invalid_request, "You may not specify both topic name and topic id.") in by
    assert (None, E.invalid_request, "Neither topic name nor id were specified.") in by
    assert partition_count(wire, name) == 1 and partition_count(wire, other) == 1
    # a name and the id it maps to
    results = delete_topics(wire, name, ids=[(None, topic_id)])
    assert all(r.error_code == E.invalid_request for r in results)
    assert partition_count(wire, name) == 1


def test_internal_topics_cannot_be_deleted(wire):
    use_coordinators(wire)
    internal = [n for n in ("__transaction_state", "__consumer_offsets") if partition_count(wire, n)]
    assert len(internal) == 2, "FindCoordinator makes the coordinators create their topics"
    for name in internal:
        (r,) = delete_topics(wire, name)
        assert r.error_code == E.invalid_request
        assert "internal topic" in r.error_message
        assert partition_count(wire, name)


def test_topic_deletion_disabled(cwire):
    name = fresh()
    create_one(cwire, name)
    (r,) = delete_topics(cwire, name, version=6)
    assert r.error_code == E.topic_deletion_disabled
    (r,) = delete_topics(cwire, name, version=2)
    assert r.error_code == E.invalid_request
    (r,) = delete_topics(cwire, name, version=5)
    assert (r.error_code, r.error_message) == (E.topic_deletion_disabled, None)
    assert partition_count(cwire, name) == 3


# --- CreatePartitions ---------------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_create_partitions_increase(wire, version):
    name = fresh()
    create_one(wire, name, partitions=1)
    (r,) = create_partitions(wire, name, 3, version=version)
    assert r.error_code == E.none and r.error_message is None
    assert partition_count(wire, name) == 3
    produce(wire, name, 1, partition=2)


def test_create_partitions_errors(wire):
    name = fresh()
    create_one(wire, name, partitions=2)
    (r,) = create_partitions(wire, name, 2)
    assert (r.error_code, r.error_message) == (E.invalid_partitions, "Topic already has 2 partition(s).")
    (r,) = create_partitions(wire, name, 1)
    assert (r.error_code, r.error_message) == (
        E.invalid_partitions, f"The topic {name} currently has 2 partition(s); 1 would not be an increase.")
    (r,) = create_partitions(wire, name, 4, assignments=[[1]])
    assert (r.error_code, r.error_message) == (
        E.invalid_replica_assignment, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were "
                                      "specified.")
    (r,) = create_partitions(wire, name, 3, assignments=[[5]])
    assert r.error_code == E.invalid_replica_assignment
    (r,) = create_partitions(wire, fresh(), 3)
    assert r.error_code == E.unknown_topic_or_partition
    results = create_partitions(wire, name, 3, extra=[(name, 4, None)])
    assert [(x.name, x.error_code) for x in results] == [(name, E.invalid_request)]
    assert partition_count(wire, name) == 2
    (r,) = create_partitions(wire, name, 3, assignments=[[1]])
    assert r.error_code == E.none and partition_count(wire, name) == 3


def test_create_partitions_validate_only(wire):
    name = fresh()
    create_one(wire, name, partitions=1)
    (r,) = create_partitions(wire, name, 5, validate_only=True)
    assert r.error_code == E.none
    assert partition_count(wire, name) == 1


# --- DescribeTopicPartitions --------------------------------------------------------------------

def test_describe_topic_partitions_pages_with_a_cursor(wire):
    base = fresh("dtp")
    a, b, c = f"{base}-a", f"{base}-b", f"{base}-c"
    create_one(wire, a, partitions=5)
    create_one(wire, b, partitions=2)
    create_one(wire, c, partitions=1)
    seen = []
    cursor = None
    for _ in range(10):
        resp = describe_topic_partitions(wire, c, b, a, limit=3, cursor=cursor)
        assert all(t.error_code == E.none for t in resp.topics)
        seen += [(t.name, p.partition_index) for t in resp.topics for p in t.partitions]
        assert sum(len(t.partitions) for t in resp.topics) <= 3
        if resp.next_cursor is None:
            break
        cursor = (resp.next_cursor.topic_name, resp.next_cursor.partition_index)
    assert seen == [(a, i) for i in range(5)] + [(b, 0), (b, 1), (c, 0)]
    first = describe_topic_partitions(wire, a, b, limit=3)
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == (a, 3)
    exact = describe_topic_partitions(wire, a, b, limit=5)
    assert [t.name for t in exact.topics] == [a]
    assert (exact.next_cursor.topic_name, exact.next_cursor.partition_index) == (b, 0)


def test_describe_topic_partitions_details(wire):
    name = fresh()
    topic_id = create_one(wire, name, partitions=2).topic_id
    resp = describe_topic_partitions(wire, name)
    (t,) = resp.topics
    assert t.topic_id == topic_id and not t.is_internal and t.topic_authorized_operations > 0
    p = t.partitions[0]
    assert (p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes, p.offline_replicas) == (1, 0, (1,), (1,), ())
    assert p.eligible_leader_replicas == () and p.last_known_elr == ()
    assert resp.next_cursor is None


def test_describe_topic_partitions_unknown_and_all(wire):
    name = fresh()
    create_one(wire, name)
    use_coordinators(wire)
    resp = describe_topic_partitions(wire, name, "no-such-topic", "bad name")
    codes = {t.name: t.error_code for t in resp.topics}
    assert codes == {name: E.none, "no-such-topic": E.unknown_topic_or_partition,
                     "bad name": E.invalid_topic_exception}
    everything = describe_topic_partitions(wire)
    names = [t.name for t in everything.topics]
    assert name in names and names == sorted(names)
    assert "__transaction_state" in names


def test_describe_topic_partitions_bad_cursor(wire):
    name = fresh()
    create_one(wire, name)
    resp = describe_topic_partitions(wire, name, cursor=("zzz-not-requested", 0))
    assert [t.error_code for t in resp.topics] == [E.invalid_request]
    resp = describe_topic_partitions(wire, name, cursor=(name, -1))
    assert [t.error_code for t in resp.topics] == [E.invalid_request]


# --- DescribeConfigs ----------------------------------------------------------------------------

def test_describe_topic_configs(wire):
    name = fresh()
    create_one(wire, name, configs={"retention.ms": "1000"})
    configs = topic_configs(wire, name, synonyms=True, docs=True)
    r = configs["retention.ms"]
    assert (r.value, r.config_source, r.read_only, r.is_sensitive, r.config_type) == ("1000", TOPIC_CONFIG, False,
                                                                                      False, 5)
    assert [(s.name, s.value, s.source) for s in r.synonyms] == [("retention.ms", "1000", TOPIC_CONFIG)]
    assert r.documentation
    c = configs["cleanup.policy"]
    assert (c.value, c.config_source, c.config_type) == ("delete", DEFAULT_CONFIG, 7)
    assert [(s.name, s.value, s.source) for s in c.synonyms] == [("log.cleanup.policy", "delete", DEFAULT_CONFIG)]
    assert configs["max.message.bytes"].value == "1048588"
    assert configs["message.timestamp.after.max.ms"].value == "3600000"
    plain = topic_configs(wire, name)
    assert plain["cleanup.policy"].synonyms == () and plain["cleanup.policy"].documentation is None


def test_describe_selected_keys_and_older_versions(wire):
    name = fresh()
    create_one(wire, name)
    (res,) = describe_configs(wire, (TOPIC, name, ("segment.ms", "no.such.key")))
    assert [c.name for c in res.configs] == ["segment.ms"]
    for version in (1, 2, 3):
        (res,) = describe_configs(wire, (TOPIC, name, ("segment.ms",)), version=version, synonyms=True)
        assert res.error_code == E.none and res.configs[0].value == "604800000"


def test_describe_unknown_or_bad_topic(wire):
    unknown, bad = describe_configs(wire, (TOPIC, fresh()), (TOPIC, "bad/name"))
    assert unknown.error_code == E.unknown_topic_or_partition and unknown.configs == ()
    assert bad.error_code == E.invalid_topic_exception and "bad/name" in bad.error_message


def test_describe_broker_configs(wire):
    this, cluster, other, junk = describe_configs(wire, (BROKER, "1"), (BROKER, ""), (BROKER, "2"), (BROKER, "x"),
                                                  synonyms=True)
    configs = {c.name: c for c in this.configs}
    assert configs["num.partitions"].value == "1" and configs["num.partitions"].config_source == DEFAULT_CONFIG
    assert configs["auto.create.topics.enable"].config_type == 1
    # Kafka's dynamic broker configs are writable, the rest read-only (broker.dynamic_configs)
    assert configs["num.partitions"].read_only and not configs["message.max.bytes"].read_only
    # kafkalite's test-friendly defaults differ from Kafka's, so they show as set
    assert configs["group.initial.rebalance.delay.ms"].config_source == STATIC_BROKER_CONFIG
    assert cluster.error_code == E.none and cluster.configs == ()
    assert other.error_code == E.invalid_request
    assert other.error_message == "Unexpected broker id, expected 1 or empty string, but received 2"
    assert junk.error_code == E.invalid_request
    assert junk.error_message == "Broker id must be an integer, but it is: x"


def test_describe_configs_of_a_configured_broker(cwire):
    (res,) = describe_configs(cwire, (BROKER, "1", ("num.partitions",)), synonyms=True)
    (c,) = res.configs
    assert (c.value, c.config_source) == ("3", STATIC_BROKER_CONFIG)
    assert [(s.value, s.source) for s in c.synonyms] == [("3", STATIC_BROKER_CONFIG), ("1", DEFAULT_CONFIG)]
    name = fresh()
    create_one(cwire, name)
    configs = topic_configs(cwire, name, synonyms=True)
    r = configs["retention.ms"]
    assert (r.value, r.config_source) == ("1000", STATIC_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in r.synonyms] == [
        ("log.retention.ms", "1000", STATIC_BROKER_CONFIG), ("log.retention.hours", "168", DEFAULT_CONFIG)]
    assert configs["segment.bytes"].value == "2097152"


def test_describe_other_resource_types(wire):
    loggers, group = describe_configs(wire, (BROKER_LOGGER, "1"), (GROUP, "g"))
    assert loggers.error_code == E.none
    assert "root" in {c.name for c in loggers.configs}
    # GROUP resources: the group configs (broker/group_configs.py), defaults when none is set
    assert group.error_code == E.none
    assert {c.name: c.value for c in group.configs}["share.auto.offset.reset"] == "latest"


# --- AlterConfigs -------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_configs_replaces_the_override_set(wire, version):
    name = fresh()
    create_one(wire, name, configs={"retention.ms": "1000", "cleanup.policy": "compact"})
    (r,) = alter_configs(wire, (TOPIC, name, [("segment.ms", "60000")]), version=version)
    assert (r.error_code, r.error_message, r.resource_name, r.resource_type) == (E.none, None, name, TOPIC)
    configs = topic_configs(wire, name)
    assert configs["segment.ms"].value == "60000" and configs["segment.ms"].config_source == TOPIC_CONFIG
    assert configs["retention.ms"].config_source == DEFAULT_CONFIG
    assert configs["cleanup.policy"].value == "delete"


def test_alter_configs_errors_and_validate_only(wire):
    name = fresh()
    create_one(wire, name, configs={"retention.ms": "1000"})
    bad, unknown, dup, nulls = alter_configs(
        wire, (TOPIC, name, [("retention.ms", "x")]), (TOPIC, fresh(), [("retention.ms", "5")]),
        (TOPIC, name + "-dup", [("a", "1"), ("a", "2")]), (TOPIC, name + "-null", [("retention.ms", None)]))
    assert (bad.error_code, bad.error_message) == (E.invalid_config, "Invalid value x for configuration retention.ms: "
                                                                     "Not a number of type LONG")
    assert unknown.error_code == E.unknown_topic_or_partition and "does not exist" in unknown.error_message
    assert (dup.error_code, dup.error_message) == (E.invalid_request, "Error due to duplicate config keys")
    assert (nulls.error_code, nulls.error_message) == (E.invalid_request, "Null value not supported for : retention.ms")
    (r,) = alter_configs(wire, (TOPIC, name, [("retention.ms", "2000")]), validate_only=True)
    assert r.error_code == E.none
    assert topic_configs(wire, name)["retention.ms"].value == "1000"
    results = alter_configs(wire, (TOPIC, name, [("retention.ms", "3")]), (TOPIC, name, [("retention.ms", "4")]))
    assert [(x.error_code, x.error_message) for x in results] == [
        (E.invalid_request, "Each resource must appear at most once.")] * 2


def test_alter_static_broker_configs_is_refused(wire):
    (r,) = alter_configs(wire, (BROKER, "1", [("num.partitions", "4")]))
    assert (r.error_code, r.error_message) == (E.invalid_request,
                                               "Cannot update these configs dynamically: [num.partitions]")
    (r,) = alter_configs(wire, (BROKER, "7", [("num.partitions", "4")]))
    assert r.error_code == E.invalid_request
    (r,) = alter_configs(wire, (BROKER, "", []))
    assert r.error_code == E.none
    (r,) = alter_configs(wire, (BROKER_LOGGER, "1", [("root", "INFO")]))
    assert r.error_code == E.invalid_request


# --- IncrementalAlterConfigs --------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1])
def test_incremental_set_delete_append_subtract(wire, version):
    name = fresh()
    create_one(wire, name, configs={"retention.ms": "1000"})
    r = incremental_topic(wire, name, ("segment.ms", SET, "60000"), ("retention.ms", DELETE, None),
                          ("cleanup.policy", APPEND, "compact"), version=version)
    assert r.error_code == E.none and r.error_message is None
    configs = topic_configs(wire, name)
    assert configs["segment.ms"].value == "60000"
    assert configs["retention.ms"].config_source == DEFAULT_CONFIG
    # APPEND to a config without override starts from Kafka's default
    assert configs["cleanup.policy"].value == "delete,compact"
    assert incremental_topic(wire, name, ("cleanup.policy", SUBTRACT, "delete")).error_code == E.none
    assert topic_configs(wire, name)["cleanup.policy"].value == "compact"
    assert incremental_topic(wire, name, ("cleanup.policy", APPEND, "compact")).error_code == E.none
    assert topic_configs(wire, name)["cleanup.policy"].value == "compact"
    assert incremental_topic(wire, name, ("cleanup.policy", SUBTRACT, "compact")).error_code == E.none
    assert topic_configs(wire, name)["cleanup.policy"].value == ""


def test_incremental_errors(wire):
    name = fresh()
    create_one(wire, name)
    r = incremental_topic(wire, name, ("retention.ms", APPEND, "5"))
    assert (r.error_code, r.error_message) == (E.invalid_config,
                                               "Can't APPEND to key retention.ms because its type is not LIST.")
    r = incremental_topic(wire, name, ("no.such", SET, "5"))
    assert (r.error_code, r.error_message) == (E.invalid_config, "Unknown topic config name: no.such")
    r = incremental_topic(wire, name, ("retention.ms", SET, None))
    assert r.error_code == E.invalid_request
    r = incremental_topic(wire, name, ("retention.ms", SET, "1"), ("retention.ms", DELETE, None))
    assert (r.error_code, r.error_message) == (E.invalid_request, "Error due to duplicate config keys")
    r = incremental_topic(wire, name, ("cleanup.policy", APPEND, "shred"))
    assert r.error_code == E.invalid_config
    r = incremental_topic(wire, fresh(), ("retention.ms", SET, "5"))
    assert r.error_code == E.unknown_topic_or_partition
    r = incremental_topic(wire, "", ("retention.ms", SET, "5"))
    assert (r.error_code, r.error_message) == (E.invalid_request, "Default topic resources are not allowed.")
    r = incremental_topic(wire, name, ("retention.ms", 9, "5"))
    assert r.error_code == E.invalid_request
    assert topic_configs(wire, name)["retention.ms"].config_source == DEFAULT_CONFIG


def test_incremental_validate_only(wire):
    name = fresh()
    create_one(wire, name)
    r = incremental_topic(wire, name, ("retention.ms", SET, "5"), validate_only=True)
    assert r.error_code == E.none
    assert topic_configs(wire, name)["retention.ms"].config_source == DEFAULT_CONFIG


def test_altered_max_message_bytes_applies_to_produce(wire):
    name = fresh()
    create_one(wire, name)
    assert produce_error(wire, name, b"x" * 2000) == E.none
    assert incremental_topic(wire, name, ("max.message.bytes", SET, "500")).error_code == E.none
    assert produce_error(wire, name, b"x" * 2000) == E.message_too_large
    assert incremental_topic(wire, name, ("max.message.bytes", DELETE, None)).error_code == E.none
    assert produce_error(wire, name, b"x" * 2000) == E.none


def test_incremental_broker_and_logger(wire):
    # each step: (resource type, name, key, operation, value), the error code and message expected
    # (None: not checked), and the value DescribeConfigs shows afterwards (None: not described)
    steps = [
        ((BROKER, "1", "num.partitions", SET, "5"),
         E.invalid_request, "Cannot update these configs dynamically: [num.partitions]", None),
        ((BROKER, "", "log.retention.ms", DELETE, None), E.none, None, None),
        ((BROKER_LOGGER, "1", "kafkalite.admin", SET, "DEBUG"), E.none, None, "DEBUG"),
        ((BROKER_LOGGER, "1", "kafkalite.admin", SET, "LOUD"), E.invalid_config, None, None),
        ((BROKER_LOGGER, "1", "root", DELETE, None), E.invalid_request, None, None),
        ((BROKER_LOGGER, "1", "kafkalite.admin", DELETE, None), E.none, None, None),
        ((GROUP, "g", "share.auto.offset.reset", SET, "earliest"), E.none, None, "earliest"),
        ((GROUP, "g", "share.auto.offset.reset", SET, "sometimes"), E.invalid_config, None, None),
        ((GROUP, "g", "no.such.group.config", SET, "1"),
         E.invalid_config, "Unknown group config name: no.such.group.config", None),
    ]
    for (rtype, rname, key, op, value), code, message, described in steps:
        (r,) = incremental(wire, (rtype, rname, [(key, op, value)]))
        assert r.error_code == code, (rtype, rname, key, op, value)
        if message is not None:
            assert r.error_message == message
        if described is not None:
            (res,) = describe_configs(wire, (rtype, rname, (key,)))
            assert [(c.name, c.value) for c in res.configs] == [(key, described)]


# --- DeleteRecords ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_moves_the_log_start(wire, version):
    name = fresh()
    create_one(wire, name, partitions=2)
    produce(wire, name, 10, per_batch=2)
    (p,) = delete_records(wire, name, (0, 4), version=version)
    assert (p.partition_index, p.error_code, p.low_watermark) == (0, E.none, 4)
    assert earliest_offset(wire, name) == 4
    (p,) = delete_records(wire, name, (0, 2), version=version)
    assert (p.error_code, p.low_watermark) == (E.none, 4)
    (p,) = delete_records(wire, name, (0, 11), version=version)
    assert (p.error_code, p.low_watermark) == (E.offset_out_of_range, -1)
    (p,) = delete_records(wire, name, (0, -7), version=version)
    assert p.error_code == E.offset_out_of_range
    (p,) = delete_records(wire, name, (0, -1), version=version)
    assert (p.error_code, p.low_watermark) == (E.none, 10)
    assert earliest_offset(wire, name) == 10
    empty, missing = delete_records(wire, name, (1, -1), (7, 0), version=version)
    assert (empty.error_code, empty.low_watermark) == (E.none, 0)
    assert (missing.error_code, missing.low_watermark) == (E.unknown_topic_or_partition, -1)
    produce(wire, name, 1)
    assert earliest_offset(wire, name) == 10


def test_delete_records_refused(wire):
    compacted = fresh()
    create_one(wire, compacted, configs={"cleanup.policy": "compact"})
    (p,) = delete_records(wire, compacted, (0, 0))
    assert p.error_code == E.policy_violation
    use_coordinators(wire)
    (p,) = delete_records(wire, "__transaction_state", (0, 0))
    assert p.error_code == E.invalid_topic_exception
    (p,) = delete_records(wire, fresh(), (0, 0))
    assert p.error_code == E.unknown_topic_or_partition


# --- OffsetForLeaderEpoch -----------------------------------------------------------------------

@pytest.mark.parametrize("version", [2, 3, 4])
def test_offset_for_leader_epoch(wire, version):
    name = fresh()
    create_one(wire, name)
    produce(wire, name, 3)
    current, unset, newer, fenced, future, missing = offset_for_epoch(
        wire, name, (0, 0, 0), (0, -1, -1), (0, -1, 5), (0, -1, 0), (0, 3, 0), (9, -1, 0), version=version)
    assert (current.error_code, current.leader_epoch, current.end_offset) == (E.none, 0, 3)
    assert (unset.error_code, unset.leader_epoch, unset.end_offset) == (E.none, -1, -1)
    assert (newer.error_code, newer.leader_epoch, newer.end_offset) == (E.none, -1, -1)
    assert (fenced.error_code, fenced.end_offset) == (E.none, 3)
    assert (future.error_code, future.leader_epoch, future.end_offset) == (E.unknown_leader_epoch, -1, -1)
    assert missing.error_code == E.unknown_topic_or_partition
    (p,) = offset_for_epoch(wire, fresh(), (0, -1, 0), version=version)
    assert p.error_code == E.unknown_topic_or_partition


# --- DescribeCluster ----------------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster(wire, broker, version):
    r = describe_cluster(wire, version=version)
    assert r.error_code == E.none
    (b,) = r.brokers
    host, port = broker.bootstrap.rsplit(":", 1)
    assert (b.broker_id, b.host, b.port) == (1, host, int(port))
    assert r.controller_id == 1 and r.cluster_id
    assert r.cluster_authorized_operations == -(2**31)
    if version >= 1:
        assert r.endpoint_type == 1
    with_ops = describe_cluster(wire, version=version, ops=True)
    assert with_ops.cluster_authorized_operations > 0


def test_describe_cluster_endpoint_types(wire):
    r = describe_cluster(wire, version=1, endpoint=2)
    assert r.error_code == E.mismatched_endpoint_type
    r = describe_cluster(wire, version=2, endpoint=3)
    assert r.error_code == E.unsupported_endpoint_type and r.error_message == "Unsupported endpoint type 3"


# --- DescribeLogDirs ----------------------------------------------------------------------------

@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_describe_log_dirs(wire, broker, version):
    name = fresh()
    create_one(wire, name, partitions=2)
    produce(wire, name, 5)
    r = describe_log_dirs(wire, [(name, [0, 1, 9]), (fresh(), [0])], version=version)
    (d,) = r.results
    assert d.error_code == E.none
    assert Path(d.log_dir) == Path(broker.data_dir).resolve()
    (t,) = d.topics
    assert t.name == name
    sizes = {p.partition_index: p.partition_size for p in t.partitions}
    assert set(sizes) == {0, 1}
    assert sizes[0] > 0 and sizes[1] == 0
    assert all(p.offset_lag == 0 and not p.is_future_key for p in t.partitions)
    if version >= 4:
        assert d.total_bytes > 0 and d.usable_bytes > 0
    everything = describe_log_dirs(wire, None, version=version).results[0]
    assert name in {t.name for t in everything.topics}


def test_list_partition_reassignments_is_empty(wire):
    name = fresh()
    create_one(wire, name, partitions=2)
    m = rmod(46, 0)
    for topics in (None, (make(m.ListPartitionReassignmentsTopics, name=name, partition_indexes=(0, 1)),)):
        r = wire.request(make(m.ListPartitionReassignmentsRequest, timeout=30_000, topics=topics))
        assert (r.error_code, r.topics) == (E.none, ())
