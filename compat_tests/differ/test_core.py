"""The differ's own machinery, without a broker: building requests, normalising answers,
comparing transcripts."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from kafkalite.protocol.records import Record, build_batch

from .core import Normaliser, compare, plain, request


def test_build_fills_nested_entities_and_drops_fields_a_version_lacks():
    req = request(1, 4, max_wait=100, min_bytes=1, isolation_level=0, session_id=7,
                  topics=[{"topic": "a", "topic_id": uuid.uuid4(),
                           "partitions": [{"partition": 0, "fetch_offset": 3, "partition_max_bytes": 10}]}])
    assert req.topics[0].topic == "a" and req.topics[0].partitions[0].fetch_offset == 3
    assert req.max_wait.total_seconds() == 0.1
    assert not hasattr(req, "session_id")  # v4 has no sessions


def test_build_refuses_a_missing_number():
    with pytest.raises(TypeError, match="min_bytes"):
        request(1, 4, max_wait=100, isolation_level=0, topics=[])


def test_identities_become_aliases_that_keep_equality():
    n = Normaliser({"t": "d-t-123"})
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    out = n({"topics": [{"name": "d-t-123", "topic_id": a}, {"name": "x", "topic_id": a},
                        {"name": "y", "topic_id": b}], "cluster_id": "abc", "throttle_time": 5,
             "node_id": 1, "producer_id": -1, "log_append_time": 1_700_000_000_000})
    assert "cluster_id" not in out and "throttle_time" not in out
    topics = out["topics"]
    assert set(topics) == {"name=t", "name=x", "name=y"}  # named entries are keyed by name
    assert topics["name=t"]["topic_id"] == topics["name=x"]["topic_id"] == "<topic-id#1>"
    assert topics["name=y"]["topic_id"] == "<topic-id#2>"
    assert out["node_id"] == "<node#1>" and out["producer_id"] == -1
    assert out["log_append_time"] == "<wall-clock>"


def test_record_batches_are_decoded_without_crc_or_clock():
    data = bytes(build_batch([Record(key=b"k", value=b"v", headers=(("h", b"1"),))], timestamp_ms=None))
    (batch,) = plain(data, "records")
    assert batch["records"] == [{"offset": 0, "key": "k", "value": "v", "headers": [["h", "1"]]}]
    assert "crc" not in batch and "max_timestamp" not in batch


def test_compare_counts_fields_and_reports_paths():
    a = [("step", {"error_code": "NONE", "parts": [1, 2], "x": {"y": 1}})]
    b = [("step", {"error_code": ErrorCode.none.name.upper(), "parts": [1, 3], "x": {"y": 1, "z": 2}})]
    result = compare(a, b)
    assert result.fields == 5
    assert [d.path for d in result.differences] == ["[0] step.parts[1]", "[0] step.x.z"] or \
        sorted(d.path for d in result.differences) == ["[0] step.parts[1]", "[0] step.x.z"]


def test_compare_reports_a_shorter_transcript():
    result = compare([("a", 1), ("b", 2)], [("a", 1)])
    assert result.differences[0].path == "transcript length"
