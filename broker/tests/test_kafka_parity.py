"""Answers that compat_tests/differ found to differ from Apache Kafka's, pinned at the protocol
level: each test sends the request the differ sent and checks the fields Kafka answers."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request
from protocol.records import COMPRESSION_ZSTD, Record, build_batch


def create(wire, name, partitions=1, configs=None):
    resp = wire.request(request(19, 7, timeout=5000, validate_only=False, topics=[
        {"name": name, "num_partitions": partitions, "replication_factor": 1,
         "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}]))
    assert resp.topics[0].error_code == ErrorCode.none
    return resp.topics[0].topic_id


def produce(wire, name, data, version=9, partition=0):
    resp = wire.request(request(0, version, transactional_id=None, acks=-1, timeout=5000, topic_data=[
        {"name": name, "partition_data": [{"index": partition, "records": bytes(data)}]}]))
    return resp.responses[0].partition_responses[0]


def recs(n, keyed=True):
    return [Record(key=b"k%d" % i if keyed else None, value=b"v%d" % i, timestamp_ms=1_600_000_000 + i)
            for i in range(n)]


def test_metadata_v0_lists_brokers_without_rack(wire):
    resp = wire.request(request(3, 0, topics=[]))
    assert [b.node_id for b in resp.brokers] == [1]
