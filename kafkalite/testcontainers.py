"""kafkalite in Docker through testcontainers (``pip install testcontainers``).

    from kafkalite.testcontainers import KafkaliteContainer

    with KafkaliteContainer("kafkalite:latest", config={"num.partitions": 3}) as kafka:
        producer = Producer({"bootstrap.servers": kafka.get_bootstrap_server()})

The container runs two listeners:

* ``EXTERNAL`` on container port 9092, exposed; advertised as ``<docker host>:<mapped port>``,
  for clients on the host running the tests;
* ``INTERNAL`` on container port 19092; advertised as ``<first network alias>:19092`` (or the
  container's IP when it has no alias), for other containers on the same Docker network
  (``get_internal_bootstrap_server()``).

With ``schema_registry=True`` the broker also serves Confluent Schema Registry's REST API on
container port 8081, exposed (``get_schema_registry_url()``). With ``controls=True`` it serves
its test controls on container port 8083, exposed, guarded by a token (``controls_token``, by
default a random one; docs/reachable.md): ``get_controls()`` is a ``kafkalite.Controls`` that
sends it. The HTTP endpoints answer the Docker host's name (``--http-allowed-hosts``), which is
how the tests reach them.

The mapped port is only known once the container runs, so, as testcontainers' own
KafkaContainer does, the broker waits for a file: the container starts with
``KAFKALITE_WAIT_FOR_ENV_FILE`` set, and ``start()`` writes ``KAFKALITE_ADVERTISED_LISTENERS``
into that file once Docker has mapped the port, then waits for the broker's ready line.
"""

from __future__ import annotations

import io
import re
import secrets
import tarfile
import time
from typing import Any, Mapping

from testcontainers.core.container import DockerContainer

__all__ = ["KafkaliteContainer", "env_name"]

DEFAULT_IMAGE = "kafkalite:latest"
READY_LINE = re.compile(r"kafkalite ready bootstrap=")


def env_name(key: str) -> str:
    """The container variable for a broker key: ``num.partitions`` -> ``KAFKALITE_NUM_PARTITIONS``."""
    return "KAFKALITE_" + re.sub(r"[.\-]", "_", key).upper()


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


SCHEMA_REGISTRY_PORT = 8081
CONTROLS_PORT = 8083


class KafkaliteContainer(DockerContainer):
    """A kafkalite broker in a container; ``get_bootstrap_server()`` after ``start()``."""

    ENV_FILE = "/tmp/kafkalite-testcontainers.env"

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        port: int = 9092,
        internal_port: int = 19092,
        config: Mapping[str, Any] | None = None,
        log_level: str | None = None,
        schema_registry: bool = False,
        controls: bool = False,
        controls_token: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(image, **kwargs)
        self.port = port
        self.internal_port = internal_port
        self.with_exposed_ports(port)
        self.with_env("KAFKALITE_LISTENERS", f"EXTERNAL://0.0.0.0:{port},INTERNAL://0.0.0.0:{internal_port}")
        self.with_env("KAFKALITE_WAIT_FOR_ENV_FILE", self.ENV_FILE)
        if log_level:
            self.with_env("KAFKALITE_LOG_LEVEL", log_level)
        for key, value in (config or {}).items():
            self.with_config(key, value)
        self.schema_registry = schema_registry
        if schema_registry:
            self.with_exposed_ports(SCHEMA_REGISTRY_PORT)
            self.with_env("KAFKALITE_SCHEMA_REGISTRY", f"0.0.0.0:{SCHEMA_REGISTRY_PORT}")
        self.controls = controls
        self.controls_token: str | None = None
        if controls:
            # the controls listen on the container's every address: a token, always
            self.controls_token = controls_token or secrets.token_urlsafe(24)
            self.with_exposed_ports(CONTROLS_PORT)
            self.with_env("KAFKALITE_CONTROLS", f"0.0.0.0:{CONTROLS_PORT}")
            self.with_env("KAFKALITE_CONTROLS_TOKEN", self.controls_token)

    def with_config(self, key: str, value: Any) -> "KafkaliteContainer":
        """A broker setting by its Kafka name (``with_config("num.partitions", 3)``)."""
        self.with_env(env_name(key), _value(value))
        return self

    # --- addresses ---------------------------------------------------------------------------
    def get_bootstrap_server(self) -> str:
        """``host:port`` for clients on the machine running the tests."""
        return _hostport(self.get_container_host_ip(), int(self.get_exposed_port(self.port)))

    def get_schema_registry_url(self) -> str:
        """``http://host:port/`` of the schema registry (started with ``schema_registry=True``)."""
        if not self.schema_registry:
            raise RuntimeError("this container was started without the schema registry; pass schema_registry=True")
        port = int(self.get_exposed_port(SCHEMA_REGISTRY_PORT))
        return f"http://{_hostport(self.get_container_host_ip(), port)}/"

    def get_controls_url(self) -> str:
        """``http://host:port/`` of the test controls (started with ``controls=True``)."""
        if not self.controls:
            raise RuntimeError("this container was started without the controls; pass controls=True")
        port = int(self.get_exposed_port(CONTROLS_PORT))
        return f"http://{_hostport(self.get_container_host_ip(), port)}/"

    def get_controls(self) -> Any:
        """The broker's test controls (a ``kafkalite.Controls`` that sends the token)."""
        from kafkalite.controls import Controls

        return Controls(self.get_controls_url(), token=self.controls_token)

    def internal_host(self) -> str:
        """The name other containers reach this one by: its first network alias, else its IP."""
        if self._network is not None and self._network_aliases:
            return self._network_aliases[0]
        # From the container's own inspect data: testcontainers' bridge_ip() reads the container
        # list, whose entries lack HostConfig under podman's Docker API.
        container = self.get_wrapped_container()
        container.reload()
        settings = container.attrs.get("NetworkSettings") or {}
        networks = settings.get("Networks") or {}
        mode = (container.attrs.get("HostConfig") or {}).get("NetworkMode", "")
        network: dict = networks.get(mode) or next(iter(networks.values()), {})
        ip = network.get("IPAddress") or settings.get("IPAddress")
        if not ip:
            raise RuntimeError(f"container {container.short_id} has no IP address on network {mode!r}")
        return ip

    def get_internal_bootstrap_server(self) -> str:
        """``host:port`` for other containers on the same Docker network."""
        return _hostport(self.internal_host(), self.internal_port)

    def advertised_listeners(self) -> str:
        return (f"EXTERNAL://{self.get_bootstrap_server()},"
                f"INTERNAL://{_hostport(self.internal_host(), self.internal_port)}")

    def env_file(self) -> bytes:
        """What ``start()`` hands the waiting entry point: the advertised listeners, and the Docker
        host's name for the HTTP endpoints' Host check (an IP or localhost passes it anyway)."""
        return (f"KAFKALITE_ADVERTISED_LISTENERS={self.advertised_listeners()}\n"
                f"KAFKALITE_HTTP_ALLOWED_HOSTS={self.get_container_host_ip()}\n").encode()

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> "KafkaliteContainer":
        super().start()
        self._put_file(self.ENV_FILE, self.env_file())
        self._wait_ready(timeout)
        return self

    def _put_file(self, path: str, content: bytes) -> None:
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            info = tarfile.TarInfo(name=path.lstrip("/"))
            info.size = len(content)
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(content))
        self.get_wrapped_container().put_archive("/", archive.getvalue())

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            stdout, stderr = self.get_logs()
            if READY_LINE.search(stdout.decode(errors="replace")):
                return
            container = self.get_wrapped_container()
            container.reload()
            if container.status in ("exited", "dead"):
                raise RuntimeError("kafkalite container exited before it was ready:\n"
                                   + stderr.decode(errors="replace")[-4000:])
            if time.monotonic() > deadline:
                raise TimeoutError(f"kafkalite container not ready after {timeout} s:\n"
                                   + stderr.decode(errors="replace")[-4000:])
            time.sleep(0.1)
