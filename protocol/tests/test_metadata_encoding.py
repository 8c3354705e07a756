"""protocol.metadata_encoding writes every Metadata response version byte for byte as kio's generic
writer does (generated entities of each version, and a broker's own answer framed by
encode_response)."""

from __future__ import annotations

import importlib
import io
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from kafkalite.protocol.metadata_encoding import encode_metadata_response
from kafkalite.protocol.messages import EncodedBody, encode_response, make

VERSIONS = range(0, 14)
I32 = st.integers(-(2**31), 2**31 - 1)
NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
ERRORS = st.sampled_from([ErrorCode.none, ErrorCode.leader_not_available, ErrorCode.unknown_topic_or_partition])


def _module(version: int):
    return importlib.import_module(f"kio.schema.metadata.v{version}.response")


def _kio_body(version: int, response) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(response))(buf, response)
    return buf.getvalue()


@st.composite
def responses(draw, version: int):
    mod = _module(version)
    nodes = st.lists(I32, max_size=4).map(tuple)
    partitions = st.lists(st.builds(
        lambda e, i, leader, epoch, r, isr, off: make(mod.MetadataResponsePartition, error_code=e, partition_index=i,
                                                       leader_id=leader, leader_epoch=epoch, replica_nodes=r,
                                                       isr_nodes=isr, offline_replicas=off),
        ERRORS, I32, I32, I32, nodes, nodes, nodes), max_size=4).map(tuple)
    topic_names = NAMES if version < 12 else st.none() | NAMES
    topics = st.lists(st.builds(
        lambda e, name, tid, internal, parts, ops: make(mod.MetadataResponseTopic, error_code=e, name=name,
                                                        topic_id=tid, is_internal=internal, partitions=parts,
                                                        topic_authorized_operations=ops),
        ERRORS, topic_names, st.none() | st.uuids(), st.booleans(), partitions, I32), max_size=3).map(tuple)
    brokers = st.lists(st.builds(
        lambda n, host, port, rack: make(mod.MetadataResponseBroker, node_id=n, host=host, port=port, rack=rack),
        I32, NAMES, I32, st.none() | NAMES), max_size=3).map(tuple)
    return make(mod.MetadataResponse, throttle_time=draw(st.integers(0, 2**31 - 1)), brokers=draw(brokers),
                cluster_id=draw(st.none() | NAMES), controller_id=draw(I32), topics=draw(topics),
                cluster_authorized_operations=draw(I32), error_code=draw(ERRORS))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_version_is_written_as_kio_writes_it(version, data):
    response = data.draw(responses(version))
    assert encode_metadata_response(version, response) == _kio_body(version, response)


def test_encode_response_frames_a_metadata_answer_with_the_hand_encoding():
    mod = _module(12)
    part = make(mod.MetadataResponsePartition, error_code=0, partition_index=3, leader_id=1, leader_epoch=7,
                replica_nodes=(1, 2), isr_nodes=(1,), offline_replicas=(2,))
    topic = make(mod.MetadataResponseTopic, error_code=0, name="t", topic_id=uuid.uuid4(), is_internal=False,
                 partitions=(part,) * 3, topic_authorized_operations=-(2**31))
    response = make(mod.MetadataResponse, throttle_time=0, brokers=(), cluster_id="c", controller_id=1,
                    topics=(topic,))
    framed = encode_response(3, 12, 42, response)
    body = _kio_body(12, response)
    assert framed == encode_response(3, 12, 42, EncodedBody(body))
