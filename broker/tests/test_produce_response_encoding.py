"""The Produce answer encoded by hand for accepted batches is byte for byte kio's encoding of
the same ProduceResponse, in every version served."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
from hypothesis import given, settings, strategies as st

from kafkalite.broker.handlers import produce
from kafkalite.broker.handlers.produce import PartitionResult, encode_accepted
from kafkalite.protocol.messages import EncodedBody, encode_response, make, response_type

VERSIONS = range(3, 14)
_int64 = st.integers(-1, 2**63 - 1)
# log_append_time: kio holds it as a datetime, which ends with the year 9999
_partition = st.tuples(st.integers(0, 2**31 - 1), _int64, st.one_of(st.just(-1), st.integers(0, 253_402_300_799_999)), _int64)
_topic = st.tuples(st.text(min_size=1, max_size=300), st.uuids(), st.lists(_partition, max_size=8))


def _kio_body(version: int, results) -> bytes:
    """What the kio path of produce._response writes for the same results."""
    import sys

    mod = sys.modules[response_type(0, version).__module__]
    ctx = SimpleNamespace(api_version=version)
    body = make(mod.ProduceResponse, throttle_time=0, node_endpoints=(), responses=tuple(
        make(mod.TopicProduceResponse, name=getattr(t, "name", None), topic_id=getattr(t, "topic_id", None),
             partition_responses=tuple(produce._partition_response(ctx, mod, i, r, {}) for i, r in prs))
        for t, prs in results))
    return encode_response(0, version, 42, body)


def _results(version: int, topics):
    out = []
    for name, topic_id, parts in topics:
        tdata = SimpleNamespace(topic_id=topic_id) if version >= 13 else SimpleNamespace(name=name)
        out.append((tdata, [(idx, PartitionResult(base_offset=base, log_append_time=lat, log_start_offset=lso))
                            for idx, base, lat, lso in parts]))
    return out


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None)
@given(topics=st.lists(_topic, max_size=4))
def test_accepted_answer_matches_kio(version, topics):
    results = _results(version, topics)
    body = encode_accepted(version, results)
    assert type(body) is EncodedBody
    assert encode_response(0, version, 42, body) == _kio_body(version, results)


@pytest.mark.parametrize("version", VERSIONS)
def test_six_partition_answer_matches_kio(version):
    topics = [("bench-perf-0-" + uuid.uuid4().hex[:8], uuid.uuid4(),
               [(i, 1000 * i, -1, 0) for i in range(6)])]
    results = _results(version, topics)
    assert encode_response(0, version, 42, encode_accepted(version, results)) == _kio_body(version, results)
