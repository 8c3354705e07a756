"""kafkalite's image run for real (podman): health check, a real client through the published
port, KAFKALITE_* settings, the data volume across restarts, SIGTERM."""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
import uuid

from compat_tests.clients.base import Msg
from compat_tests.clients.librdkafka import LibrdkafkaAdmin, LibrdkafkaClient
from container_tests.podman import (
    container,
    inspect,
    logs,
    podman,
    podman_cmd,
    remove,
    run_detached,
    wait_for_log,
)

READY = "kafkalite ready bootstrap="


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def published(port: int) -> dict:
    """Options that publish the broker at 127.0.0.1:port and advertise that address, as
    `docker run -p 9092:9092` does with the image's defaults."""
    return dict(publish=(), options=["--publish", f"127.0.0.1:{port}:9092"],
                env={"KAFKALITE_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}"})


def healthcheck(cid: str) -> int:
    """Runs the image's HEALTHCHECK command once, as the engine's timer would; its exit status."""
    return subprocess.run(podman_cmd("healthcheck", "run", cid), capture_output=True, timeout=60).returncode


def health_status(cid: str) -> str:
    state = inspect(cid)["State"]
    return (state.get("Health") or state.get("Healthcheck") or {}).get("Status", "")


def roundtrip(bootstrap: str, topic: str, values: list[bytes]) -> list[bytes]:
    client = LibrdkafkaClient(bootstrap)
    client.produce(topic, [Msg(v) for v in values], partition=0)
    return [m.value for m in client.consume(topic, [0], len(values), timeout_s=30)]


def test_image_serves_a_client_and_turns_healthy(kafkalite_image):
    port = free_port()
    opts = published(port)
    # the broker waits for the env file, as under testcontainers: not healthy until it serves
    opts["env"].update(KAFKALITE_NUM_PARTITIONS="3", KAFKALITE_WAIT_FOR_ENV_FILE="/tmp/late.env")
    with container(kafkalite_image, **opts) as cid:
        assert healthcheck(cid) != 0
        assert health_status(cid) in ("starting", "unhealthy")
        podman("exec", cid, "sh", "-c", "echo KAFKALITE_LOG_LEVEL=DEBUG > /tmp/late.env")
        out = wait_for_log(cid, READY)
        deadline = time.monotonic() + 20
        while healthcheck(cid) != 0:
            assert time.monotonic() < deadline, logs(cid)
            time.sleep(0.2)
        assert health_status(cid) == "healthy"
        # KAFKALITE_* from the container's environment and from the env file both apply
        assert "num.partitions=3 (from env)" in out
        # KAFKALITE_LOG_LEVEL=DEBUG from the env file: one line per connection (the health check's)
        assert "connection opened from 127.0.0.1" in logs(cid)
        # not root, and the data dir is the volume
        assert podman("exec", cid, "id", "-u").strip() == "10001"
        assert "/var/lib/kafkalite" in {m["Destination"] for m in inspect(cid)["Mounts"]}

        bootstrap = f"127.0.0.1:{port}"
        values = [f"v{i}".encode() for i in range(10)]
        assert roundtrip(bootstrap, "container-rt", values) == values
        # auto-created with the num.partitions the container was given
        described = LibrdkafkaAdmin(bootstrap).describe_topics(["container-rt"])
        assert described["container-rt"]["partitions"] == [0, 1, 2]


def test_data_volume_survives_restart(kafkalite_image):
    volume = f"kafkalite-test-{uuid.uuid4().hex[:8]}"
    port = free_port()
    opts = published(port)
    opts["options"] += ["--volume", f"{volume}:/var/lib/kafkalite"]
    bootstrap = f"127.0.0.1:{port}"
    first = [f"before-{i}".encode() for i in range(5)]
    try:
        cid = run_detached(kafkalite_image, **opts)
        try:
            wait_for_log(cid, READY)
            assert roundtrip(bootstrap, "durable", first) == first
            # the same container stopped and started again
            podman("stop", "--time", "10", cid)
            podman("start", cid)
            deadline = time.monotonic() + 30
            while logs(cid).count(READY) < 2:
                assert time.monotonic() < deadline, logs(cid)
                time.sleep(0.1)
            more = [b"after-restart"]
            assert roundtrip(bootstrap, "durable", more) == first[:1]  # reads from offset 0
            got = LibrdkafkaClient(bootstrap).consume("durable", [0], 6, timeout_s=30)
            assert [m.value for m in got] == first + more
        finally:
            remove(cid)
        # a new container on the same volume
        with container(kafkalite_image, **opts) as cid2:
            wait_for_log(cid2, READY)
            got = LibrdkafkaClient(bootstrap).consume("durable", [0], 6, timeout_s=30)
            assert [m.value for m in got] == first + more
            assert [m.offset for m in got] == list(range(6))
    finally:
        podman("volume", "rm", "--force", volume, check=False)


def test_sigterm_stops_the_broker_cleanly_within_a_second(kafkalite_image):
    with container(kafkalite_image) as cid:
        wait_for_log(cid, READY)
        # podman stop sends SIGTERM, then SIGKILL after --time seconds: exit status 0 (not
        # 137) means the broker ended by itself within the second
        started = time.monotonic()
        podman("stop", "--time", "1", cid)
        elapsed = time.monotonic() - started
        state = inspect(cid)["State"]
        assert state["ExitCode"] == 0, (state, logs(cid))
        assert not state.get("OOMKilled")
        assert elapsed < 10  # the podman call itself, on a loaded machine
        assert "Traceback" not in logs(cid)


def test_a_bad_setting_stops_the_container_with_the_brokers_message(kafkalite_image):
    with container(kafkalite_image, env={"KAFKALITE_NUM_PARTITON": "3"}) as cid:
        status = int(podman("wait", cid, timeout=60).strip())
        assert status == 2
        out = logs(cid)
        assert "KAFKALITE_NUM_PARTITIONS" in out and "Traceback" not in out


def test_image_serves_sasl_ssl_with_a_throwaway_ca(kafkalite_image):
    """A SASL_SSL listener configured by variables only (KAFKALITE_TLS_SELF_SIGNED, SCRAM users,
    a listener-prefixed JAAS config): healthy, and a SCRAM client trusting the CA from the
    container's data dir produces and consumes."""
    port = free_port()
    env = {"KAFKALITE_LISTENERS": "SASL_SSL://0.0.0.0:9093",
           "KAFKALITE_ADVERTISED_LISTENERS": f"SASL_SSL://127.0.0.1:{port}",
           "KAFKALITE_TLS_SELF_SIGNED": "true",
           "KAFKALITE_SCRAM_USERS": "SCRAM-SHA-512=[name=app,password=app-secret]",
           "KAFKALITE_LISTENER_NAME_SASL_SSL_PLAIN_SASL_JAAS_CONFIG":
               'org.apache.kafka.common.security.plain.PlainLoginModule required user_app="app-secret";'}
    with container(kafkalite_image, publish=(), options=["--publish", f"127.0.0.1:{port}:9093"], env=env) as cid:
        out = wait_for_log(cid, READY)
        assert "ca=/var/lib/kafkalite/tls/ca.pem" in out
        assert "app-secret" not in logs(cid)
        deadline = time.monotonic() + 20
        while healthcheck(cid) != 0:
            assert time.monotonic() < deadline, logs(cid)
            time.sleep(0.2)
        ca = podman("exec", cid, "cat", "/var/lib/kafkalite/tls/ca.pem")
        with tempfile.NamedTemporaryFile("w", suffix=".pem") as f:
            f.write(ca)
            f.flush()
            client = LibrdkafkaClient(f"127.0.0.1:{port}", config={
                "security.protocol": "SASL_SSL", "ssl.ca.location": f.name, "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "app", "sasl.password": "app-secret"})
            client.create_topic("secured", 1)
            client.produce("secured", [Msg(b"over SASL_SSL")], partition=0)
            assert [m.value for m in client.consume("secured", [0], 1, timeout_s=30)] == [b"over SASL_SSL"]
