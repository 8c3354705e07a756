"""kafkalite.testcontainers without a Docker engine: the container's command, environment and
the advertised-listener hand-over, then that environment fed to the real entry point."""

from __future__ import annotations

import io
import socket
import tarfile

import pytest

pytest.importorskip("testcontainers")

from testcontainers.core import container as tc_container  # noqa: E402

from kafkalite.tests.test_docker import Entrypoint, image_env  # noqa: E402

from kio.schema.metadata.v12.request import MetadataRequest  # noqa: E402

from kafkalite.protocol.client import WireClient  # noqa: E402


class FakeDockerClient:
    """Stands in for testcontainers' DockerClient (whose constructor asks the daemon its version)."""

    def __init__(self, **kwargs):
        self.client = self

    def close(self):
        pass


class FakeContainer:
    id = "c0ffee"
    short_id = "c0ffee"
    status = "running"
    attrs = {"HostConfig": {"NetworkMode": "bridge"},
             "NetworkSettings": {"Networks": {"bridge": {"IPAddress": "172.17.0.5"}}}}

    def __init__(self):
        self.archives: list[tuple[str, bytes]] = []
        self.stdout = b""

    def put_archive(self, path, data):
        self.archives.append((path, data))
        self.stdout = b"kafkalite ready bootstrap=docker-host:32777 listeners=...\n"
        return True

    def logs(self, stdout=True, stderr=True):
        return self.stdout if stdout else b""

    def reload(self):
        pass

    def remove(self, **kwargs):
        pass

    def files(self) -> dict[str, str]:
        out = {}
        for path, data in self.archives:
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                for member in tar.getmembers():
                    out[path.rstrip("/") + "/" + member.name] = tar.extractfile(member).read().decode()
                    assert member.mode == 0o644  # readable by the image's non-root user
        return out


@pytest.fixture
def no_docker(monkeypatch):
    monkeypatch.setattr(tc_container, "DockerClient", FakeDockerClient)
    created: dict = {}

    def fake_start(self):
        created.update(image=self.image, command=self._command, env=dict(self.env), ports=dict(self.ports))
        self._container = FakeContainer()
        return self

    monkeypatch.setattr(tc_container.DockerContainer, "start", fake_start)
    monkeypatch.setattr(tc_container.DockerContainer, "get_container_host_ip", lambda self: "docker-host")
    monkeypatch.setattr(tc_container.DockerContainer, "get_exposed_port",
                        lambda self, port: 32777 if int(port) == self.port else None)
    return created


def test_command_and_environment(no_docker):
    from kafkalite.testcontainers import KafkaliteContainer

    c = KafkaliteContainer(config={"num.partitions": 3, "auto.create.topics.enable": False}, log_level="DEBUG")
    c.with_config("transaction.max.timeout.ms", 60000)
    assert c.image.endswith("kafkalite:latest")
    assert {str(port): host for port, host in c.ports.items()} == {"9092": None}  # testcontainers < 4.9: int keys
    assert c._command is None  # the image's entry point, unchanged
    assert c.env == {
        "KAFKALITE_LISTENERS": "EXTERNAL://0.0.0.0:9092,INTERNAL://0.0.0.0:19092",
        "KAFKALITE_WAIT_FOR_ENV_FILE": "/tmp/kafkalite-testcontainers.env",
        "KAFKALITE_LOG_LEVEL": "DEBUG",
        "KAFKALITE_NUM_PARTITIONS": "3",
        "KAFKALITE_AUTO_CREATE_TOPICS_ENABLE": "false",
        "KAFKALITE_TRANSACTION_MAX_TIMEOUT_MS": "60000",
    }


def test_start_hands_over_the_mapped_port(no_docker):
    from kafkalite.testcontainers import KafkaliteContainer

    c = KafkaliteContainer("registry.example/kafkalite:1.0").start()
    assert no_docker["image"].endswith("registry.example/kafkalite:1.0")
    files = c.get_wrapped_container().files()
    assert files == {"/tmp/kafkalite-testcontainers.env":
                     "KAFKALITE_ADVERTISED_LISTENERS=EXTERNAL://docker-host:32777,INTERNAL://172.17.0.5:19092\n"
                     "KAFKALITE_HTTP_ALLOWED_HOSTS=docker-host\n"}
    assert c.get_bootstrap_server() == "docker-host:32777"
    assert c.get_internal_bootstrap_server() == "172.17.0.5:19092"


def test_network_alias_is_the_internal_host(no_docker):
    from kafkalite.testcontainers import KafkaliteContainer

    c = KafkaliteContainer(internal_port=29092)
    c._network = object()  # as with_network(Network()) does, without a daemon
    c.with_network_aliases("kafka", "broker")
    c.start()
    assert c.get_internal_bootstrap_server() == "kafka:29092"
    assert "INTERNAL://kafka:29092" in c.env_file().decode()


def test_start_fails_when_the_container_exits(no_docker, monkeypatch):
    from kafkalite.testcontainers import KafkaliteContainer

    c = KafkaliteContainer()

    def put_archive(path, data):
        c._container.status = "exited"
        return True

    monkeypatch.setattr(FakeContainer, "put_archive", lambda self, path, data: put_archive(path, data))
    with pytest.raises(RuntimeError, match="exited before it was ready"):
        c.start(timeout=5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metadata_brokers(address: str):
    with WireClient(address) as c:
        resp = c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                         include_topic_authorized_operations=False))
    return [(b.host, b.port) for b in resp.brokers]


def test_the_containers_settings_work_with_the_real_entry_point(no_docker, tmp_path):
    """What the container would run: the image's environment + the container's + the env file."""
    from kafkalite.testcontainers import KafkaliteContainer

    external, internal = free_port(), free_port()
    c = KafkaliteContainer(port=external, internal_port=internal, config={"num.partitions": 2})
    c._network = object()
    c.with_network_aliases("kafka")
    c.start()
    (env_path, env_text), = c.get_wrapped_container().files().items()
    local_env_file = tmp_path / "tc.env"
    env = image_env(KAFKALITE_DATA_DIR=str(tmp_path / "data"), **c.env)
    env["KAFKALITE_WAIT_FOR_ENV_FILE"] = str(local_env_file)
    e = Entrypoint(env)
    try:
        local_env_file.write_text(env_text)
        info = e.ready()
        assert info["bootstrap"] == "docker-host:32777"
        assert info["listeners"] == {"EXTERNAL": "docker-host:32777", "INTERNAL": f"kafka:{internal}"}
        # the host's clients come in through the mapped port and are told the mapped address;
        # containers on the network come in on the internal listener and are told the alias
        assert metadata_brokers(f"127.0.0.1:{external}") == [("docker-host", 32777)]
        assert metadata_brokers(f"127.0.0.1:{internal}") == [("kafka", internal)]
    finally:
        assert e.stop() == 0


def test_controls_with_their_token_and_the_docker_hosts_name(no_docker, tmp_path):
    """controls=True: the container serves the controls with a random token; the Docker host's
    name, by which the tests reach the published port, passes the Host check. Run with the real
    entry point (the controls on loopback here, where the container would listen on 0.0.0.0)."""
    import http.client

    from kafkalite.testcontainers import CONTROLS_PORT, KafkaliteContainer

    c = KafkaliteContainer(port=free_port(), internal_port=free_port(), controls=True)
    assert c.env["KAFKALITE_CONTROLS"] == f"0.0.0.0:{CONTROLS_PORT}"
    assert len(c.controls_token or "") >= 24 and c.env["KAFKALITE_CONTROLS_TOKEN"] == c.controls_token
    assert KafkaliteContainer(controls=True).controls_token != c.controls_token
    assert KafkaliteContainer().controls_token is None
    assert "KAFKALITE_CONTROLS_TOKEN" not in KafkaliteContainer().env
    c.start()
    (_path, env_text), = c.get_wrapped_container().files().items()
    controls_port = free_port()
    local_env_file = tmp_path / "tc.env"
    env = image_env(KAFKALITE_DATA_DIR=str(tmp_path / "data"), **c.env)
    env["KAFKALITE_WAIT_FOR_ENV_FILE"] = str(local_env_file)
    env["KAFKALITE_CONTROLS"] = f"127.0.0.1:{controls_port}"
    e = Entrypoint(env)
    try:
        local_env_file.write_text(env_text)
        e.ready()

        def get(host: str, token: str | None) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", controls_port, timeout=10)
            headers = {"Host": host, **({"Authorization": f"Bearer {token}"} if token else {})}
            conn.request("GET", "/controls", headers=headers)
            return conn.getresponse().status

        assert get(f"docker-host:{controls_port}", c.controls_token) == 200
        assert get(f"docker-host:{controls_port}", None) == 401
        assert get(f"elsewhere.example:{controls_port}", c.controls_token) == 421
        from kafkalite.controls import Controls

        assert Controls(f"http://127.0.0.1:{controls_port}/", token=c.controls_token).call("clock")["offset_ms"] == 0
    finally:
        assert e.stop() == 0
