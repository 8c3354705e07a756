"""kafkalite.testcontainers.KafkaliteContainer against a real engine (podman's Docker API): the
bootstrap address from the host, a client in a second container on the same network through the
internal listener's network alias, and transactions through the container."""

from __future__ import annotations

import json
import uuid

import pytest

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from compat_tests.clients.base import Msg
from compat_tests.clients.librdkafka import LibrdkafkaAdmin, LibrdkafkaClient
from container_tests.podman import inspect
from kafkalite.testcontainers import KafkaliteContainer

# Runs in the client container: produce through the given bootstrap address, read the records
# back, and print what the broker's metadata advertised to this client.
CLIENT_SCRIPT = r"""
import json, sys
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
bootstrap, topic = sys.argv[1], sys.argv[2]
md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=20)
brokers = [f"{b.host}:{b.port}" for b in md.brokers.values()]
p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
for i in range(3):
    p.produce(topic, f"from-container-{i}".encode(), partition=0)
assert p.flush(30) == 0
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "in-network", "enable.auto.commit": False})
c.assign([TopicPartition(topic, 0, 0)])
got = []
while len(got) < 3:
    m = c.poll(30)
    assert m is not None and m.error() is None, m and m.error()
    got.append(m.value().decode())
c.close()
print(json.dumps({"brokers": brokers, "consumed": got}))
"""


def loopback(container: KafkaliteContainer) -> KafkaliteContainer:
    """The broker's port published on the host's loopback only, at a free port. testcontainers'
    with_bind_ports takes no host address; its port map goes to docker-py, which takes one."""
    container.ports[str(container.port)] = ("127.0.0.1", None)  # type: ignore[assignment]
    return container


def test_bootstrap_from_the_host(kafkalite_image, docker_env):
    with loopback(KafkaliteContainer(kafkalite_image, config={"num.partitions": 2})) as kafka:
        bootstrap = kafka.get_bootstrap_server()
        host, port = bootstrap.rsplit(":", 1)
        assert int(port) != kafka.port or host != "localhost"  # the mapped port, not 9092
        client = LibrdkafkaClient(bootstrap)
        values = [f"m{i}".encode() for i in range(20)]
        client.produce("tc-host", [Msg(v) for v in values], partition=1)
        assert [m.value for m in client.consume("tc-host", [1], 20)] == values
        admin = LibrdkafkaAdmin(bootstrap)
        assert admin.describe_topics(["tc-host"])["tc-host"]["partitions"] == [0, 1]
        # the metadata this client got names the address it can reach
        assert [(n["host"], n["port"]) for n in admin.describe_cluster()["nodes"]] == [(host, int(port))]
        # without a network alias, other containers are pointed at the container's IP
        networks = inspect(kafka.get_wrapped_container().id)["NetworkSettings"]["Networks"]
        ips = {n["IPAddress"] for n in networks.values()}
        assert kafka.get_internal_bootstrap_server() in {f"{ip}:19092" for ip in ips}


def test_a_container_on_the_same_network_uses_the_internal_listener(kafkalite_image, client_image,
                                                                     docker_env):
    topic = f"tc-net-{uuid.uuid4().hex[:6]}"
    with Network() as network:
        kafka = loopback(KafkaliteContainer(kafkalite_image)).with_network(network).with_network_aliases("kafka")
        with kafka:
            assert kafka.get_internal_bootstrap_server() == "kafka:19092"
            app = (DockerContainer(client_image).with_network(network)
                   .with_command(["python3", "-c", CLIENT_SCRIPT, kafka.get_internal_bootstrap_server(), topic]))
            with app:
                wrapped = app.get_wrapped_container()
                status = wrapped.wait(timeout=120)["StatusCode"]
                stdout, stderr = app.get_logs()
                assert status == 0, stderr.decode(errors="replace")[-3000:]
            result = json.loads(stdout.decode().strip().splitlines()[-1])
            # the broker answered the client in the network with the alias, not the host's address
            assert result["brokers"] == ["kafka:19092"]
            assert result["consumed"] == [f"from-container-{i}" for i in range(3)]
            # and the host's client reads the same records through the external listener
            got = LibrdkafkaClient(kafka.get_bootstrap_server()).consume(topic, [0], 3)
            assert [m.value.decode() for m in got] == result["consumed"]


def test_transactions_through_the_container(kafkalite_image, docker_env):
    with loopback(KafkaliteContainer(kafkalite_image)) as kafka:
        bootstrap = kafka.get_bootstrap_server()
        LibrdkafkaAdmin(bootstrap).create_topic("tc-txn", partitions=1)
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tc-txn-producer",
                             "broker.address.family": "v4"})
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(3):
            producer.produce("tc-txn", f"aborted-{i}".encode(), partition=0)
        assert producer.flush(30) == 0  # written to the log before the abort (else only purged locally)
        producer.abort_transaction(30)
        producer.begin_transaction()
        for i in range(3):
            producer.produce("tc-txn", f"committed-{i}".encode(), partition=0)
        producer.commit_transaction(30)

        def read(isolation: str) -> list[str]:
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                                 "isolation.level": isolation, "enable.auto.commit": False,
                                 "broker.address.family": "v4", "enable.partition.eof": True})
            consumer.assign([TopicPartition("tc-txn", 0, 0)])
            out = []
            try:
                while True:
                    m = consumer.poll(30)
                    assert m is not None, f"no end of partition after {out}"
                    if m.error() is not None:
                        if m.error().code() == m.error()._PARTITION_EOF:
                            return out
                        raise KafkaException(m.error())
                    out.append(m.value().decode())
            finally:
                consumer.close()

        assert read("read_committed") == [f"committed-{i}" for i in range(3)]
        assert read("read_uncommitted") == [f"aborted-{i}" for i in range(3)] + [f"committed-{i}" for i in range(3)]


def test_controls_through_the_container_with_their_token(kafkalite_image, docker_env):
    """controls=True: the controls listen on the container's 0.0.0.0:8083, so the module gives
    them a random token, which get_controls() sends; without it the broker answers 401."""
    import urllib.request

    from kafkalite.controls import ControlFailed, Controls
    from kafkalite.testcontainers import CONTROLS_PORT

    container = loopback(KafkaliteContainer(kafkalite_image, controls=True))
    container.ports[str(CONTROLS_PORT)] = ("127.0.0.1", None)  # type: ignore[assignment]
    with container as kafka:
        controls = kafka.get_controls()
        assert controls.call("advance-clock", ms=1000)["offset_ms"] == 1000
        with pytest.raises(ControlFailed) as refused:
            Controls(kafka.get_controls_url(), token="not-the-token").call("clock")
        assert refused.value.status == 401
        # curl's way: JSON with the bearer token
        req = urllib.request.Request(kafka.get_controls_url() + "controls/clock", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {kafka.controls_token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200
