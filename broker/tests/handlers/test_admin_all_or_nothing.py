"""All or nothing (broker.all_or_nothing): every mutating admin API, asked while the disk is full,
answers KAFKA_STORAGE_ERROR and leaves memory as it was; a restart then reads the same state back
from disk. The same request once the disk has room succeeds, and a restart keeps its change: the
state each case compares is one the change does alter.

The full disk is broker.tests.disk_faults.fill_metadata_disk_while: every whole-file write writes
a few bytes of its temporary file and fails with ENOSPC."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
import trio
from kio.schema.errors import ErrorCode as E

from kafkalite.broker.authorizer import (STANDARD_AUTHORIZER, AclFilter, AclOperation, AclPermissionType,
                                         PatternType, ResourceType)
from kafkalite.broker.sasl import SaslSession, SaslState
from kafkalite.broker.state import Broker

from ..disk_faults import fill_metadata_disk_while
from .fake import InProcessBroker, create_topic, in_process_broker

TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
SET = 0
LITERAL, READ, ALLOW = 3, 3, 3
AUTHORIZER = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS"}
TOKENS = {"delegation.token.secret.key": "a-secret-of-the-test"}
TWO_NODES = {"nodes": 2}

Shared = dict[str, Any]


@dataclass
class Case:
    """`setup` makes what the change needs (kept through restarts, it is on disk); `change`
    sends the API's request and returns the error codes of its answer; `observe` is the state
    the change alters, read from the broker's memory."""
    setup: Callable[[InProcessBroker, Shared], Awaitable[None]]
    change: Callable[[InProcessBroker, Shared], Awaitable[list[int]]]
    observe: Callable[[Broker, Shared], Any]
    settings: dict[str, Any] = field(default_factory=dict)
    before_each: Callable[[InProcessBroker, Shared], None] | None = None
    # the state a restart must find, from memory before it (default: `observe`)
    saved: Callable[[Broker, Shared], Any] | None = None
    # what the change answers on the full disk
    failed: int = E.kafka_storage_error


async def _nothing(b: InProcessBroker, shared: Shared) -> None:
    return None


async def _topic(b: InProcessBroker, shared: Shared) -> None:
    shared["topic_id"] = await create_topic(b, "t", 2)


def _topics(broker: Broker, shared: Shared) -> Any:
    return sorted((t.name, str(t.topic_id), len(t.partitions), sorted(t.configs.items()),
                   [p.replicas for p in t.partitions]) for t in broker.cluster.topics.values())


async def _create_topics(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(19, 7, timeout=10000, validate_only=False,
                     topics=[{"name": "new", "num_partitions": 3, "replication_factor": 1}])
    return [t.error_code for t in r.topics]


async def _delete_topics(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(20, 6, timeout=10000, topics=[{"name": "t", "topic_id": None}])
    return [t.error_code for t in r.responses]


async def _create_partitions(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(37, 3, timeout=10000, validate_only=False,
                     topics=[{"name": "t", "count": 5, "assignments": None}])
    return [t.error_code for t in r.results]


def _config_change(api_key: int, version: int, resource_type: int, name: str, key: str, value: str):
    async def change(b: InProcessBroker, shared: Shared) -> list[int]:
        config: dict[str, Any] = {"name": key, "value": value}
        if api_key == 44:
            config["config_operation"] = SET
        r = await b.call(api_key, version, validate_only=False, resources=[
            {"resource_type": resource_type, "resource_name": name, "configs": [config]}])
        return [x.error_code for x in r.responses]
    return change


def _broker_configs(broker: Broker, shared: Shared) -> Any:
    dyn = broker.dynamic_configs
    return dyn.defaults, dyn.per_broker, broker.config.values["log.retention.ms"]


def _group_configs(broker: Broker, shared: Shared) -> Any:
    return broker.services.share.configs.values


def _client_metrics(broker: Broker, shared: Shared) -> Any:
    return broker.telemetry.subscriptions


def _held(b: InProcessBroker, shared: Shared) -> None:
    b.broker.reassignments.hold(True)


async def _reassign(b: InProcessBroker, shared: Shared) -> list[int]:
    node = b.broker.cluster.node_ids[1]
    r = await b.call(45, 0, timeout=10000,
                     topics=[{"name": "t", "partitions": [{"partition_index": 0, "replicas": [node]}]}])
    return [p.error_code for t in r.responses for p in t.partitions]


def _replicas(broker: Broker, shared: Shared) -> Any:
    return _topics(broker, shared), sorted((k, v.replicas) for k, v in broker.reassignments.ongoing.items())


def _replicas_once_done(broker: Broker, shared: Shared) -> Any:
    """The replica lists with every reassignment in progress completed: what a restart, which
    ends the hold, finds."""
    ongoing = broker.reassignments.ongoing
    return sorted((t.name, [ongoing[(t.name, p.index)].target if (t.name, p.index) in ongoing else p.replicas
                            for p in t.partitions]) for t in broker.cluster.topics.values())


def _acl(name: str) -> dict[str, Any]:
    return {"resource_type": TOPIC, "resource_name": name, "resource_pattern_type": LITERAL,
            "principal": "User:alice", "host": "*", "operation": READ, "permission_type": ALLOW}


async def _one_acl(b: InProcessBroker, shared: Shared) -> None:
    r = await b.call(30, 3, creations=[_acl("kept")])
    assert r.results[0].error_code == E.none


async def _create_acls(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(30, 3, creations=[_acl("a"), _acl("b")])
    return [x.error_code for x in r.results]


async def _delete_acls(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(31, 3, filters=[{
        "resource_type_filter": TOPIC, "resource_name_filter": "kept", "pattern_type_filter": LITERAL,
        "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}])
    return [f.error_code for f in r.filter_results]


def _acls(broker: Broker, shared: Shared) -> Any:
    assert broker.authorizer is not None
    return broker.authorizer.acls(AclFilter(ResourceType.ANY, None, PatternType.ANY, None, None, AclOperation.ANY,
                                            AclPermissionType.ANY))


async def _scram_user(b: InProcessBroker, shared: Shared) -> None:
    r = await b.call(51, 0, deletions=[], upsertions=[_upsertion("old")])
    assert r.results[0].error_code == E.none


def _upsertion(user: str) -> dict[str, Any]:
    return {"name": user, "mechanism": 1, "iterations": 4096, "salt": b"salt-" + user.encode(),
            "salted_password": hashlib.sha256(user.encode()).digest()}


async def _alter_scram(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(51, 0, deletions=[{"name": "old", "mechanism": 1}], upsertions=[_upsertion("new")])
    return [x.error_code for x in r.results]


def _scram(broker: Broker, shared: Shared) -> Any:
    return {u: sorted(m) for u, m in broker.scram.users.items()}


async def _alter_quotas(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(49, 1, validate_only=False, entries=[
        {"entity": [{"entity_type": "user", "entity_name": "alice"}],
         "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]},
        {"entity": [{"entity_type": "client-id", "entity_name": "app"}],
         "ops": [{"key": "request_percentage", "value": 50.0, "remove": False}]}])
    return [x.error_code for x in r.entries]


def _quotas(broker: Broker, shared: Shared) -> Any:
    return sorted((k, sorted(v.items())) for k, v in broker.quotas.values.items())


async def _update_features(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(57, 1, timeout=10000, validate_only=False, feature_updates=[
        {"feature": "group.version", "max_version_level": 0, "upgrade_type": 2, "allow_downgrade": True}])
    return [r.error_code]


def _features(broker: Broker, shared: Shared) -> Any:
    return broker.features.levels, broker.features.epoch


def _sasl_alice(b: InProcessBroker, shared: Shared) -> None:
    """The connection as one that authenticated as User:alice with SCRAM (tokens need SASL)."""
    session = SaslSession(b.conn.security, b.broker.scram)
    session.state, session.principal = SaslState.COMPLETE, "User:alice"
    b.conn.sasl, b.conn.principal = session, "User:alice"


async def _create_token(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(38, 3, owner_principal_type=None, owner_principal_name=None, renewers=[], max_lifetime=-1)
    return [r.error_code]


async def _a_token(b: InProcessBroker, shared: Shared) -> None:
    r = await b.call(38, 3, owner_principal_type=None, owner_principal_name=None, renewers=[], max_lifetime=-1)
    assert r.error_code == E.none
    shared["hmac"] = r.hmac


async def _renew_token(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(39, 2, hmac=shared["hmac"], renew_period=3_600_000)
    return [r.error_code]


async def _expire_token(b: InProcessBroker, shared: Shared) -> list[int]:
    r = await b.call(40, 2, hmac=shared["hmac"], expiry_time_period=-1)
    return [r.error_code]


def _tokens(broker: Broker, shared: Shared) -> Any:
    return sorted((t.token_id, t.expiry_ms) for t in broker.delegation_tokens.tokens.values())


async def _empty_share_group(b: InProcessBroker) -> None:
    """A member joins "sg" and leaves: an empty share group (not kept across a restart)."""
    for epoch in (0, -1):
        hb = await b.call(76, 1, group_id="sg", member_id="m1", member_epoch=epoch, rack_id=None,
                          subscribed_topic_names=["t"] if epoch == 0 else None)
        assert hb.error_code == E.none, hb


async def _share_group_with_configs(b: InProcessBroker, shared: Shared) -> None:
    await create_topic(b, "t", 1)
    codes = await _config_change(44, 1, GROUP, "sg", "share.session.timeout.ms", "50000")(b, shared)
    assert codes == [E.none]
    await _empty_share_group(b)


async def _delete_groups(b: InProcessBroker, shared: Shared) -> list[int]:
    if not b.broker.services.share.known("sg"):
        await _empty_share_group(b)
    r = await b.call(42, 2, groups_names=["sg"])
    return [g.error_code for g in r.results]


def _share_group(broker: Broker, shared: Shared) -> Any:
    return broker.services.share.known("sg"), _group_configs(broker, shared)


CASES: dict[str, Case] = {
    "CreateTopics": Case(_nothing, _create_topics, _topics),
    "DeleteTopics": Case(_topic, _delete_topics, _topics),
    "CreatePartitions": Case(_topic, _create_partitions, _topics),
    "AlterConfigs topic": Case(_topic, _config_change(33, 2, TOPIC, "t", "retention.ms", "1000"), _topics),
    "IncrementalAlterConfigs topic": Case(_topic, _config_change(44, 1, TOPIC, "t", "retention.ms", "1000"),
                                          _topics),
    "AlterConfigs broker": Case(_nothing, _config_change(33, 2, BROKER, "1", "log.retention.ms", "3600000"),
                                _broker_configs),
    "IncrementalAlterConfigs broker": Case(_nothing, _config_change(44, 1, BROKER, "1", "log.retention.ms", "3600000"),
                                           _broker_configs),
    "IncrementalAlterConfigs cluster default": Case(
        _nothing, _config_change(44, 1, BROKER, "", "log.retention.ms", "3600000"), _broker_configs),
    "IncrementalAlterConfigs group": Case(
        _nothing, _config_change(44, 1, GROUP, "g", "share.session.timeout.ms", "50000"), _group_configs),
    "IncrementalAlterConfigs client metrics": Case(
        _nothing, _config_change(44, 1, CLIENT_METRICS, "sub", "interval.ms", "60000"), _client_metrics),
    # a share group's configs go with it; the coordinator's answer to a failed write is NOT_COORDINATOR
    "DeleteGroups share group": Case(_share_group_with_configs, _delete_groups, _share_group, saved=_group_configs,
                                     failed=E.not_coordinator),
    # a move that adds a replica runs while it catches up (reassignment.catch.up.ms): memory
    # holds it running, the disk its target, as for a held one
    "AlterPartitionReassignments": Case(_topic, _reassign, _replicas, TWO_NODES, saved=_replicas_once_done),
    "AlterPartitionReassignments held": Case(_topic, _reassign, _replicas, TWO_NODES, _held, _replicas_once_done),
    "CreateAcls": Case(_nothing, _create_acls, _acls, AUTHORIZER),
    "DeleteAcls": Case(_one_acl, _delete_acls, _acls, AUTHORIZER),
    "AlterUserScramCredentials": Case(_scram_user, _alter_scram, _scram),
    "AlterClientQuotas": Case(_nothing, _alter_quotas, _quotas),
    "UpdateFeatures": Case(_nothing, _update_features, _features),
    "CreateDelegationToken": Case(_nothing, _create_token, _tokens, TOKENS, _sasl_alice),
    "RenewDelegationToken": Case(_a_token, _renew_token, _tokens, TOKENS, _sasl_alice),
    "ExpireDelegationToken": Case(_a_token, _expire_token, _tokens, TOKENS, _sasl_alice),
}


def _temporary_files(data_dir: Path) -> list[str]:
    return sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*.tmp"))


@pytest.mark.parametrize("name", list(CASES))
def test_a_change_the_full_disk_refuses_changes_nothing(name: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    saved = case.saved or case.observe
    disk = {"full": False}
    fill_metadata_disk_while(monkeypatch, disk, "full")
    shared: Shared = {}

    async def started(b: InProcessBroker) -> InProcessBroker:
        if case.before_each is not None:
            case.before_each(b, shared)
        return b

    async def main() -> None:
        async with in_process_broker(tmp_path, **case.settings) as b:
            await started(b)
            await case.setup(b, shared)
            before, saved_before = case.observe(b.broker, shared), saved(b.broker, shared)
            disk["full"] = True
            codes = await case.change(b, shared)
            disk["full"] = False
            assert codes and all(c == case.failed for c in codes), codes
            assert case.observe(b.broker, shared) == before, "memory changed"
            assert _temporary_files(tmp_path) == []
        async with in_process_broker(tmp_path, **case.settings) as b:
            await started(b)
            assert saved(b.broker, shared) == saved_before, "the disk holds another state than memory did"
            # with room on the disk the same request succeeds, and a restart keeps it
            codes = await case.change(b, shared)
            assert codes and all(c == E.none for c in codes), codes
            assert case.observe(b.broker, shared) != before
            saved_after = saved(b.broker, shared)
            assert saved_after != saved_before
        async with in_process_broker(tmp_path, **case.settings) as b:
            assert saved(b.broker, shared) == saved_after

    trio.run(main)


def test_elect_leaders_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Leaders live in memory only: an election on a full disk elects (a restart starts every
    partition at its preferred leader, broker.cluster)."""
    disk = {"full": False}
    fill_metadata_disk_while(monkeypatch, disk, "full")

    async def main() -> None:
        async with in_process_broker(tmp_path, nodes=2) as b:
            await create_topic(b, "t", 1)
            part = b.broker.cluster.partition("t", 0)
            assert part is not None
            b.broker.cluster.move_leader(part, part.replicas[-1] if len(part.replicas) > 1 else part.replicas[0])
            disk["full"] = True
            r = await b.call(43, 2, election_type=0, timeout=10000,
                             topic_partitions=[{"topic": "t", "partitions": [0]}])
            disk["full"] = False
            code = r.replica_election_results[0].partition_result[0].error_code
            assert code in (E.none, E.election_not_needed), code
            assert part.leader == part.replicas[0]

    trio.run(main)


def test_no_temporary_file_is_left_by_a_failed_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalite.storage.files import write_atomic

    disk = {"full": True}
    fill_metadata_disk_while(monkeypatch, disk, "full")
    path = tmp_path / "f.json"
    path.write_bytes(b"old")
    with pytest.raises(OSError):
        write_atomic(path, b"new contents", fsync=True)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.json"]
