"""A topic whose creation meets a full disk (a partition that cannot be opened, or
topics.json that cannot be saved) is not created at all: CreateTopics answers
KAFKA_STORAGE_ERROR and the same request later creates the topic whole; an internal topic
created on first use leaves no coordinator, and FindCoordinator, JoinGroup, InitProducerId and
AddOffsetsToTxn answer COORDINATOR_NOT_AVAILABLE (clients look the coordinator up again), and a
Metadata that would auto-create a topic LEADER_NOT_AVAILABLE, on a
connection that stays open, until the disk works."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode as E

from kafkalite.broker import cluster as broker_cluster
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.messages import make
from kafkalite.protocol.records import Record, build_batch

from .disk_faults import fail_while, no_space
from .test_admin import create_one, create_topics
from .test_groups_wire import join, mod
from .test_produce_storage_errors import _with_broker
from .test_transactions_wire import _init
from .test_wire import produce


@pytest.fixture(params=["partition", "topics.json"])
def disk(request, monkeypatch):
    """`disk["bad"] = True`: partitions cannot be opened (after `spared` more have been, so that
    a topic with more partitions is left half made), or topics.json cannot be saved."""
    state = {"bad": False, "spared": 2, "where": request.param}
    if request.param == "partition":
        real_open = broker_cluster.PartitionLog.open

        def open_log(directory, config, **kw):
            if state["bad"]:
                if state["spared"] <= 0:
                    raise no_space()
                state["spared"] -= 1
            return real_open(directory, config, **kw)

        monkeypatch.setattr(broker_cluster.PartitionLog, "open", staticmethod(open_log))
    else:
        monkeypatch.setattr(broker_cluster.Cluster, "save",
                            fail_while(state, "bad", broker_cluster.Cluster.save, no_space))
    return state


def _find(c, key_type: int, key: str):
    m = mod("find_coordinator", 4)
    (found,) = c.request(make(m.FindCoordinatorRequest, key_type=key_type, coordinator_keys=(key,))).coordinators
    return found


def _partition_dirs(data_dir, topic: str) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir() if p.name.startswith(f"{topic}-"))


def _metadata_names(c) -> set[str]:
    m = mod("metadata", 12)
    r = c.request(make(m.MetadataRequest, topics=None, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False))
    return {t.name for t in r.topics}


def test_create_topics_is_all_or_nothing(tmp_path, disk):
    """A user topic's partitions open on first use (broker.cluster): a disk that refuses them fails
    its first produce, not its creation; one that refuses topics.json fails the creation whole."""
    def exchange(address):
        with WireClient(address) as c:
            name = f"t-{uuid.uuid4().hex[:8]}"
            disk["bad"] = True
            if disk["where"] == "partition":
                disk["spared"] = 0
                assert create_one(c, name, partitions=4).error_code == E.none
                batch = build_batch([Record(value=b"v")], timestamp_ms=1_700_000_000_000)
                assert produce(c, name, batch, partition=2).error_code == E.kafka_storage_error
                disk["bad"] = False
                assert produce(c, name, batch, partition=2).error_code == E.none
                assert _partition_dirs(tmp_path, name) == [f"{name}-2"]
                return True
            assert create_one(c, name, partitions=4).error_code == E.kafka_storage_error
            assert name not in _metadata_names(c)
            assert _partition_dirs(tmp_path, name) == []
            disk["bad"] = False
            # before: TOPIC_ALREADY_EXISTS, with a topic missing partitions
            assert create_one(c, name, partitions=4).error_code == E.none
            m = mod("metadata", 12)
            r = c.request(make(m.MetadataRequest, topics=(make(m.MetadataRequestTopic, name=name, topic_id=None),),
                               allow_auto_topic_creation=False, include_topic_authorized_operations=False))
            assert sorted(p.partition_index for p in r.topics[0].partitions) == [0, 1, 2, 3]
            assert _partition_dirs(tmp_path, name) == []    # each made by its partition's first write
        return True
    assert _with_broker(tmp_path, {}, exchange)


def test_one_create_topics_writes_topics_json_once(tmp_path, monkeypatch):
    """Ten topics in one CreateTopics: topics.json is written once, with all of them; when that
    write fails, none of them is created (every one answers KAFKA_STORAGE_ERROR)."""
    saves = []
    real_save = broker_cluster.Cluster.save
    state = {"bad": False}

    def save(self, **kw):
        saves.append(len(self.topics))
        if state["bad"]:
            raise no_space()
        return real_save(self, **kw)

    monkeypatch.setattr(broker_cluster.Cluster, "save", save)

    def exchange(address):
        with WireClient(address) as c:
            names = [f"t{i}-{uuid.uuid4().hex[:6]}" for i in range(10)]
            before = len(saves)
            results = create_topics(c, *({"name": n, "partitions": 3} for n in names))
            assert [r.error_code for r in results] == [E.none] * 10
            assert len(saves) == before + 1
            assert set(names) <= _metadata_names(c)
            state["bad"] = True
            lost = [f"u{i}-{uuid.uuid4().hex[:6]}" for i in range(10)]
            results = create_topics(c, *({"name": n, "partitions": 3} for n in lost))
            assert [r.error_code for r in results] == [E.kafka_storage_error] * 10
            assert not set(lost) & _metadata_names(c)
            assert all(_partition_dirs(tmp_path, n) == [] for n in lost)
        return True
    assert _with_broker(tmp_path, {}, exchange)


def _no_coordinator_while_disk_is_bad(c, tmp_path, disk, key_type: int, key: str, topic: str, first_use,
                                      spared: int = 0) -> None:
    """While the disk is bad (`spared` partition directories still open), FindCoordinator and the
    first request that needs the coordinator (`first_use()`, its error code) answer
    COORDINATOR_NOT_AVAILABLE and the internal `topic` is not made at all; once the disk works,
    FindCoordinator names a coordinator."""
    disk["bad"], disk["spared"] = True, spared
    found = _find(c, key_type, key)
    assert (found.error_code, found.node_id) == (E.coordinator_not_available, -1)
    assert first_use() == E.coordinator_not_available
    assert topic not in _metadata_names(c)
    assert _partition_dirs(tmp_path, topic) == []
    disk["bad"] = False
    found = _find(c, key_type, key)
    assert found.error_code == E.none and found.node_id >= 0

def test_no_group_coordinator_while_consumer_offsets_cannot_be_created(tmp_path, disk):
    def exchange(address):
        with WireClient(address) as c:
            group = f"g-{uuid.uuid4().hex[:8]}"
            _no_coordinator_while_disk_is_bad(c, tmp_path, disk, 0, group, "__consumer_offsets",
                                              lambda: join(c, group).error_code)
            assert join(c, group).error_code == E.member_id_required
            assert _partition_dirs(tmp_path, "__consumer_offsets") == ["__consumer_offsets-0"]
        return True
    assert _with_broker(tmp_path, {}, exchange)


def test_no_transaction_coordinator_while_transaction_state_cannot_be_created(tmp_path, disk):
    def exchange(address):
        with WireClient(address) as c:
            tid = f"tx-{uuid.uuid4().hex[:8]}"
            _no_coordinator_while_disk_is_bad(c, tmp_path, disk, 1, tid, "__transaction_state",
                                              lambda: _init(c, tid)[0], spared=1)
            err, pid, epoch = _init(c, tid)
            assert err == E.none and pid >= 0 and epoch == 0
            # the one partition the transactional id's state was written to has its directory
            (made,) = _partition_dirs(tmp_path, "__transaction_state")
            assert made in {f"__transaction_state-{i}" for i in range(3)}
            # AddOffsetsToTxn names a group whose __consumer_offsets cannot be made yet
            group = f"g-{uuid.uuid4().hex[:8]}"
            m = mod("add_offsets_to_txn", 3)
            add = make(m.AddOffsetsToTxnRequest, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                       group_id=group)
            disk["bad"], disk["spared"] = True, 0
            assert c.request(add).error_code == E.coordinator_not_available
            disk["bad"] = False
            assert c.request(add).error_code == E.none
        return True
    # three partitions, so that the failed creation leaves one made (then removed)
    assert _with_broker(tmp_path, {"transaction.state.log.num.partitions": 3}, exchange)


def test_metadata_auto_creation_on_a_full_disk_is_leader_not_available(tmp_path, disk):
    def exchange(address):
        with WireClient(address) as c:
            name = f"a-{uuid.uuid4().hex[:8]}"
            m = mod("metadata", 12)
            ask = make(m.MetadataRequest, topics=(make(m.MetadataRequestTopic, name=name, topic_id=None),),
                       allow_auto_topic_creation=True, include_topic_authorized_operations=False)
            disk["bad"], disk["spared"] = True, 0
            if disk["where"] == "topics.json":
                assert c.request(ask).topics[0].error_code == E.leader_not_available
                assert _partition_dirs(tmp_path, name) == []
                disk["bad"] = False
            # created now (a partition that cannot be opened fails its first use, not its creation)
            assert c.request(ask).topics[0].error_code == E.unknown_topic_or_partition
            disk["bad"] = False
            (t,) = c.request(ask).topics
            assert t.error_code == E.none and len(t.partitions) == 1
        return True
    assert _with_broker(tmp_path, {}, exchange)
