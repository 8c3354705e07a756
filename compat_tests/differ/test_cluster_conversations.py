"""The conversations that need three nodes (cluster_conversations.py), at the lowest and the
highest version both serve: on three Apache Kafka 4.4 processes and on kafkalite --nodes 3
(compat_tests/cluster.py), started once for the module."""

from __future__ import annotations

import pytest

from compat_tests.cluster import Cluster

from .cluster_conversations import CLUSTER_CONVERSATIONS
from .core import assert_alike, common_versions

pytestmark = [pytest.mark.cluster_admin, pytest.mark.slow]

CASES = [pytest.param(name, end, id=f"{name.replace(' ', '-')}-{end}")
         for name in CLUSTER_CONVERSATIONS for end in ("lowest", "highest")]


@pytest.fixture(scope="module")
def reference_cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("kafka-cluster"), kafka=True)
    yield c.bootstrap
    c.close()


@pytest.fixture(scope="module")
def subject_cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("kafkalite-cluster"), kafka=False)
    yield c.bootstrap
    c.close()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name,end", CASES)
def test_cluster_conversation(name, end, reference_cluster, subject_cluster):
    assert_alike(name, CLUSTER_CONVERSATIONS[name], reference_cluster, subject_cluster, end,
                 common_versions(reference_cluster, subject_cluster))
