"""Features and the metadata quorum through the Java Admin client, on kafkalite and on Apache Kafka
(COMPAT_BROKER=kafka): describeFeatures lists Kafka 4.4's supported and finalized features,
updateFeatures downgrades transaction.version safely and upgrades it back (refusing an unmarked
downgrade), describeMetadataQuorum names a leader that is one of the voters."""

from __future__ import annotations

import pytest

from compat_tests.clients.java import JavaClient
from compat_tests.waiting import wait_until


@pytest.fixture
def java(bootstrap):
    return JavaClient(bootstrap)


def _finalized(java) -> dict:
    (features,) = java.admin({"op": "describeFeatures"})
    return features["finalized"]


def test_describe_and_update_features(java):
    (features,) = java.admin({"op": "describeFeatures"})
    assert features["supported"]["metadata.version"] == [7, 33]
    assert features["supported"]["kraft.version"] == [0, 1]
    assert features["finalized"]["transaction.version"] == [2, 2]
    assert features["finalized"]["group.version"] == [1, 1]
    (refused,) = java.admin({"op": "updateFeatures", "updates": {"transaction.version": [1, "UPGRADE"]}},
                            raise_errors=False)
    assert refused.code == "INVALID_UPDATE_VERSION" and "Can't downgrade the version of this feature" in refused.message
    java.admin({"op": "updateFeatures", "updates": {"transaction.version": [1, "SAFE_DOWNGRADE"]}})
    try:
        wait_until(lambda: _finalized(java)["transaction.version"] == [1, 1], timeout=20,
                   what="transaction.version to be finalized at 1")
    finally:
        java.admin({"op": "updateFeatures", "updates": {"transaction.version": [2, "UPGRADE"]}})
    wait_until(lambda: _finalized(java)["transaction.version"] == [2, 2], timeout=20,
               what="transaction.version to be finalized at 2 again")


def test_describe_metadata_quorum(java):
    (quorum,) = java.admin({"op": "describeMetadataQuorum"})
    assert quorum["leader"] in quorum["voters"] and len(quorum["voters"]) == 1
    assert quorum["epoch"] > 0 and quorum["high_watermark"] > 0 and quorum["observers"] == []
    assert quorum["nodes"] == {str(quorum["leader"]): ["CONTROLLER"]}
