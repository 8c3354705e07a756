"""broker.topic_store: the topics.json file, written whole and atomically, read back as written."""

from __future__ import annotations

import json

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
