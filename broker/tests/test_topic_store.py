"""broker.topic_store: the topics.json file, written whole and atomically, read back as written;
broker.cluster's saves of it."""

from __future__ import annotations

import json

from kafkalite.broker.cluster import Cluster
from kafkalite.broker.settings.broker_config import BrokerConfig
from kafkalite.broker.settings.listeners import Listener
from kafkalite.broker.topic_store import FILE_NAME, load_topics, save_topics


def test_no_file_is_no_topics_and_the_directory_is_made(tmp_path):
    meta = tmp_path / "__cluster_metadata"
    assert load_topics(meta) == []
    assert meta.is_dir()


def test_saved_topics_read_back_in_order(tmp_path):
    topics = [
        {"name": "b", "id": "2f3c1a4e-0000-0000-0000-000000000001", "partitions": 2, "configs": {"retention.ms": "5"},
         "replicas": [[1], [1]]},
        {"name": "a", "id": "2f3c1a4e-0000-0000-0000-000000000002", "partitions": 1, "configs": {},
         "replicas": [[1]]},
    ]
    save_topics(tmp_path, topics)
    assert load_topics(tmp_path) == topics
    # one topic a line, between the opening and closing lines
    lines = (tmp_path / FILE_NAME).read_text().splitlines()
    assert len(lines) == 2 + len(topics) and json.loads(lines[1].rstrip(",")) == topics[0]
    # a second save replaces the file whole and leaves no temporary file behind
    save_topics(tmp_path, topics[1:])
    assert load_topics(tmp_path) == topics[1:]
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE_NAME]
    save_topics(tmp_path, [])
    assert load_topics(tmp_path) == []


def test_a_file_of_an_older_version_without_replica_lists_reads(tmp_path):
    (tmp_path / FILE_NAME).write_text(json.dumps({"topics": [
        {"name": "t", "id": "2f3c1a4e-0000-0000-0000-000000000003", "partitions": 3, "configs": {}}]}))
    [entry] = load_topics(tmp_path)
    assert entry["partitions"] == 3 and "replicas" not in entry


def test_the_cluster_rewrites_each_change_and_keeps_the_lines_of_the_rest(tmp_path):
    """Cluster.save keeps a topic's line while its configs and replica lists are the objects it was
    made from: what changed since is written, and a restart reads every topic as memory held it."""
    config = BrokerConfig(data_dir=tmp_path, listeners=[Listener("PLAINTEXT", "127.0.0.1", 0)],
                          values={"nodes": 3})
    c = Cluster(config)
    c.load()
    a = c.create_topic("a", 2, replication_factor=2)
    b = c.create_topic("b", 1, replication_factor=1)
    c.alter_topic_configs(a, {"retention.ms": "5"})
    moved = [n for n in c.node_ids if n not in b.partitions[0].replicas][0]
    c.move_leader(b.partitions[0], moved)       # saves a copy of b's new list, then holds another
    c.create_topic("c", 1)
    c.alter_topic_configs(a, {"retention.ms": "7"})
    c.close()
    stored = {t["name"]: t for t in load_topics(tmp_path / "__cluster_metadata")}
    assert stored["a"]["configs"] == {"retention.ms": "7"}
    assert stored["a"]["replicas"] == [p.replicas for p in a.partitions]
    assert stored["b"]["replicas"] == [[moved]]
    assert sorted(stored) == ["a", "b", "c"]
    c.delete_topic(b)
    assert sorted(t["name"] for t in load_topics(tmp_path / "__cluster_metadata")) == ["a", "c"]
