"""UpdateFeatures and DescribeQuorum (broker.handlers.cluster_features, broker.features): Kafka's
refusals, a safe downgrade and upgrade of transaction.version seen in ApiVersions and kept over a
restart, and the quorum of one node and of three. compat_tests/differ ("update features",
"describe quorum") holds the same requests against Apache Kafka."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request
from kafkalite.broker.features import SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE, FeatureUpdate, FeatureUpdateError, Features
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers


@pytest.mark.parametrize("update,message", [
    (FeatureUpdate("no.such.version", 1, UPGRADE),
     "Invalid update version 1 for feature no.such.version. Local controller 1 does not support this feature."),
    (FeatureUpdate("group.version", 9, UPGRADE),
     "Invalid update version 9 for feature group.version. Local controller 1 only supports versions 0-1"),
    (FeatureUpdate("transaction.version", 1, UPGRADE),
     "Invalid update version 1 for feature transaction.version. Can't downgrade the version of this feature "
     "without setting the upgrade type to either safe or unsafe downgrade."),
    (FeatureUpdate("metadata.version", 7, SAFE_DOWNGRADE),
     "Unsupported metadata.version downgrade from 33 to 7. Refusing to perform the requested downgrade because it "
     "might delete metadata information."),
    (FeatureUpdate("metadata.version", 7, UNSAFE_DOWNGRADE),
     "Unsupported metadata.version downgrade from 33 to 7. Unsafe metadata downgrade is not supported in this version."),
])
def test_refusals(tmp_path, update, message):
    features = Features(tmp_path, _Config(), None, 1)
    with pytest.raises(FeatureUpdateError) as exc:
        features.update([update], validate_only=False)
    assert str(exc.value) == message
    assert features.epoch == 1


class _Config:
    def __init__(self) -> None:
        self.values = {"transaction.version": 2}

    def __getitem__(self, key):
        return self.values[key]


def finalized(wire):
    resp = wire.request(request(18, 4, client_software_name="t", client_software_version="1"))
    return resp.finalized_features_epoch, {f.name: f.max_version_level for f in resp.finalized_features}, \
        {f.name: (f.min_version, f.max_version) for f in resp.supported_features}


def update(wire, v, updates, validate_only=False):
    return wire.request(request(57, v, timeout=5000, validate_only=validate_only, feature_updates=[
        {"feature": f, "max_version_level": level, "upgrade_type": kind, "allow_downgrade": False}
        for f, level, kind in updates]))


def test_downgrade_upgrade_and_restart(tmp_path):
    with suite_brokers.running(data_dir=tmp_path) as broker:
        with WireClient(broker.bootstrap) as wire:
            epoch, levels, supported = finalized(wire)
            assert levels["transaction.version"] == 2 and "kraft.version" not in levels
            assert supported["metadata.version"] == (7, 33) and supported["kraft.version"] == (0, 1)
            assert levels["metadata.version"] == 33
            resp = update(wire, 1, [("transaction.version", 1, SAFE_DOWNGRADE)], validate_only=True)
            assert resp.error_code == ErrorCode.none and finalized(wire)[1]["transaction.version"] == 2
            resp = update(wire, 2, [("transaction.version", 1, SAFE_DOWNGRADE)])
            assert (resp.error_code, resp.error_message) == (ErrorCode.none, None)
            after_epoch, levels, _ = finalized(wire)
            assert levels["transaction.version"] == 1 and after_epoch > epoch
            resp = update(wire, 0, [("group.version", 0, SAFE_DOWNGRADE)])  # v0: no downgrades at all
            assert resp.error_code == ErrorCode.invalid_update_version and resp.results == ()
    with suite_brokers.running(data_dir=tmp_path) as broker:
        with WireClient(broker.bootstrap) as wire:
            assert finalized(wire)[1]["transaction.version"] == 1
            assert update(wire, 2, [("transaction.version", 2, UPGRADE)]).error_code == ErrorCode.none
            assert finalized(wire)[1]["transaction.version"] == 2


def test_quorum_of_three_nodes():
    with suite_brokers.running(config={"nodes": 3}) as broker:
        with WireClient(broker.bootstrap) as wire:
            resp = wire.request(request(55, 2, topics=[{"topic_name": "__cluster_metadata",
                                                        "partitions": [{"partition_index": 0}]}]))
            part = resp.topics[0].partitions[0]
            assert part.error_code == ErrorCode.none and part.leader_epoch == 1
            assert sorted(v.replica_id for v in part.current_voters) == [1, 2, 3] and part.observers == ()
            assert part.leader_id == 1 and part.high_watermark >= 1
            assert [(n.node_id, [lis.name for lis in n.listeners]) for n in resp.nodes] == [
                (1, ["CONTROLLER"]), (2, ["CONTROLLER"]), (3, ["CONTROLLER"])]
            resp = wire.request(request(55, 0, topics=[{"topic_name": "other", "partitions": [{"partition_index": 0}]}]))
            assert resp.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
