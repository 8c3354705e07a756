"""--kafka-version: the advertised ranges and features of an older Kafka release, the versions
above them refused as that release refuses them, and the features' behaviour (group.version 0:
the KIP-848 APIs answer UNSUPPORTED_VERSION; transaction.version follows the release)."""

from __future__ import annotations

import socket
import subprocess

import pytest
from kio.schema.errors import ErrorCode

import kafkalite
from kafkalite.broker.kafka_versions import release, releases
from compat_tests.differ.core import request
from kafkalite.protocol.client import WireClient, decode_response
from kafkalite.tests import suite_brokers


def api_versions(bootstrap, version=3):
    with WireClient(bootstrap) as w:
        return w.request(request(18, version, client_software_name="test", client_software_version="1"))


def test_the_table_covers_the_releases_clients_meet():
    assert releases() == ["2.8", "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9",
                          "4.0", "4.1", "4.2"]
    # a few facts checked by hand against the release's schemas
    assert release("3.9").apis[0] == (0, 11) and release("4.0").apis[0] == (3, 12)
    assert release("3.9").apis[26] == (0, 4) and release("4.0").apis[26] == (0, 5)
    assert 68 not in release("3.6").apis and release("3.7").apis[68] == (0, 0)
    assert release("3.9.1").name == "3.9"
    with pytest.raises(ValueError, match="must be one of 2.8, 3.0"):
        release("5.0")


@pytest.fixture(scope="module")
def kafka39():
    with suite_brokers.running(kafka_version="3.9") as b:
        yield b


def test_3_9_advertises_its_ranges_and_features(kafka39):
    resp = api_versions(kafka39.bootstrap, 4)
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    # Produce from v0 as Kafka advertises it, up to 3.9's v11; EndTxn v4 (no KIP-890 part 2)
    assert keys[0] == (0, 11) and keys[26] == (0, 4) and keys[24] == (0, 5)
    # ConsumerGroupHeartbeat v0 is advertised by 3.9 (and answered UNSUPPORTED_VERSION)
    assert keys[68] == (0, 0) and keys[75] == (0, 0)
    assert {(f.name, f.min_version, f.max_version) for f in resp.supported_features} == {
        ("metadata.version", 1, 21), ("kraft.version", 0, 1)}
    assert [(f.name, f.min_version_level, f.max_version_level) for f in resp.finalized_features] == [
        ("metadata.version", 21, 21)]


def test_3_9_closes_the_connection_on_a_version_above_its_range(kafka39):
    with WireClient(kafka39.bootstrap) as w:
        w.send_only(request(0, 12, transactional_id=None, acks=-1, timeout=5000, topic_data=[]))
        with pytest.raises((ConnectionError, EOFError, OSError, socket.timeout)):
            w.recv_frame()
    # ApiVersions above the range: UNSUPPORTED_VERSION in the v0 format, with the release's range
    with suite_brokers.running(kafka_version="2.8") as b:
        with WireClient(b.bootstrap) as w:
            w.send_only(request(18, 4, client_software_name="test", client_software_version="1"))
            resp = decode_response(18, 0, w.recv_frame())
        assert resp.error_code == ErrorCode.unsupported_version
        assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(18, 0, 3)]
        # 2.8 has no ConsumerGroupHeartbeat: not advertised, and a request closes the connection
        assert 68 not in {k.api_key for k in api_versions(b.bootstrap).api_keys}


def test_3_9_answers_the_kip_848_apis_with_unsupported_version(kafka39):
    with WireClient(kafka39.bootstrap) as w:
        resp = w.request(request(68, 0, group_id="g", member_id="m", member_epoch=0, instance_id=None, rack_id=None,
                                 rebalance_timeout=30000, subscribed_topic_names=["t"], server_assignor=None,
                                 topic_partitions=[]))
        assert (resp.error_code, resp.error_message) == (ErrorCode.unsupported_version,
                                                         "The version of API is not supported.")
        resp = w.request(request(69, 0, group_ids=["g"], include_authorized_operations=False))
        assert [g.error_code for g in resp.groups] == [ErrorCode.unsupported_version]


def test_4_0_finalizes_transactions_v2_and_group_version_1():
    with suite_brokers.running(kafka_version="4.0") as b:
        resp = api_versions(b.bootstrap, 4)
        assert {(f.name, f.max_version_level) for f in resp.finalized_features} == {
            ("metadata.version", 25), ("transaction.version", 2), ("group.version", 1)}
        keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert keys[0] == (0, 12) and keys[26] == (0, 5) and 75 in keys


def test_a_transaction_version_the_release_lacks_is_a_usage_error():
    out = subprocess.run(kafkalite.broker_command(["--port", "0", "--kafka-version", "3.9", "-c",
                                                   "transaction.version=2"]),
                         capture_output=True, text=True, timeout=60, env=kafkalite._broker_env())
    assert out.returncode == 2 and "transaction.version=2 is above what Kafka 3.9 supports (0)" in out.stderr
    env = kafkalite._broker_env()
    env["KAFKALITE_KAFKA_VERSION"] = "1.0"  # start() decides this variable; set it after
    out = subprocess.run(kafkalite.broker_command(["--port", "0"]), capture_output=True, text=True, timeout=60,
                         env=env)
    assert out.returncode == 2 and "--kafka-version must be one of" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.librdkafka
def test_librdkafka_runs_a_transaction_against_the_oldest_release():
    import uuid

    from confluent_kafka import Consumer, Producer

    with suite_brokers.running(kafka_version="2.8") as b:
        topic = f"kv-{uuid.uuid4().hex[:6]}"
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": f"kv-{uuid.uuid4().hex[:6]}"})
        p.init_transactions(20)
        p.begin_transaction()
        p.produce(topic, b"committed")
        p.commit_transaction(20)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "kv", "auto.offset.reset": "earliest",
                      "isolation.level": "read_committed"})
        try:
            c.subscribe([topic])
            got = None
            for _ in range(150):
                m = c.poll(0.2)
                if m is not None and not m.error():
                    got = m.value()
                    break
        finally:
            c.close()
        assert got == b"committed"
        assert "closing connection" not in b.log_text()  # nothing asked for a version 2.8 lacks
