"""kafkalite's image under podman: the build (cached by content), containers, and podman's Docker API.

Every podman call goes through scripts/podman.sh, which owns podman's settings (vfs storage under
.cache/podman, runc, cgroupfs, no default rlimits). The base image (Debian bookworm's Python 3.11,
``localhost/kafkalite-base:bookworm``) is made by scripts/container-base.sh, which
scripts/install-test-deps.sh runs.

``build_image()`` builds the Dockerfile on that base once per content hash (Dockerfile,
.dockerignore and every file the build copies, plus the base image's id), tagged
``localhost/kafkalite:<hash>``; a second run finds the tag and reuses it. ``build_client_image()``
makes, the same way, an image with confluent-kafka for client containers.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import http.client
import importlib.metadata
import json
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, Mapping, Sequence

REPO = Path(__file__).resolve().parents[1]
PODMAN_SH = REPO / "scripts" / "podman.sh"
BASE_IMAGE = "localhost/kafkalite-base:bookworm"
IMAGE_REPO = "localhost/kafkalite"
CLIENT_IMAGE_REPO = "localhost/kafkalite-test-client"
# The files the Dockerfile copies (and .dockerignore lets through): tests and bytecode are not.
CONTEXT = ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md", "docker", "broker", "protocol",
           "storage", "kafkalite")
# The build's pip reaches PyPI through this machine's CA bundle (outbound TLS may be re-signed by a
# proxy that only the machine trusts); Debian's pip in the base image reads this bundle.
HOST_CERTS = Path("/etc/ssl/certs")


class PodmanError(RuntimeError):
    pass


def podman_cmd(*args: str) -> list[str]:
    return ["bash", str(PODMAN_SH), *args]


def podman(*args: str, timeout: float = 120, check: bool = True, input: bytes | None = None) -> str:
    """Runs podman; returns its stdout (text). A failure raises with podman's stderr."""
    res = subprocess.run(podman_cmd(*args), capture_output=True, timeout=timeout, input=input)
    if check and res.returncode != 0:
        raise PodmanError(f"podman {' '.join(args)} exited with {res.returncode}:\n"
                          + res.stderr.decode(errors="replace")[-4000:])
    return res.stdout.decode(errors="replace")


def _cache_dir() -> Path:
    d = Path(os.environ.get("KAFKALITE_PODMAN_DIR") or REPO / ".cache" / "podman")
    d.mkdir(parents=True, exist_ok=True)
    return d


def context_hash() -> str:
    h = hashlib.sha256()
    for name in CONTEXT:
        top = REPO / name
        files = [top] if top.is_file() else sorted(
            p for p in top.rglob("*")
            if p.is_file() and "tests" not in p.relative_to(top).parts and "__pycache__" not in p.parts
            and p.suffix != ".pyc")
        for p in files:
            h.update(str(p.relative_to(REPO)).encode() + b"\0" + p.read_bytes() + b"\0")
    base_id = podman("image", "inspect", "--format", "{{.Id}}", BASE_IMAGE, check=False).strip()
    if not base_id:
        raise PodmanError(f"base image {BASE_IMAGE} not found: run scripts/install-test-deps.sh "
                          "(scripts/container-base.sh makes it)")
    h.update(base_id.encode())
    return h.hexdigest()[:16]


def image_exists(ref: str) -> bool:
    return subprocess.run(podman_cmd("image", "exists", ref), capture_output=True, timeout=60).returncode == 0


def _build(tag: str, containerfile: Path, context: Path, timeout: float) -> str:
    with open(_cache_dir() / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if image_exists(tag):
            return tag
        # --format docker: OCI image metadata has no HEALTHCHECK. --layers=false: one layer per
        # stage, not one per instruction.
        podman("build", "--format", "docker", "--layers=false", "--pull=never",
               "--build-arg", f"BASE_IMAGE={BASE_IMAGE}",
               "--volume", f"{HOST_CERTS}:/etc/ssl/certs:ro",
               "--tag", tag, "--file", str(containerfile), str(context), timeout=timeout)
        # the unnamed build stage and images of older sources are not needed again. Only images
        # built over a day ago go: another checkout sharing this storage may be using a recent
        # one (and one a container still uses is kept: rmi without --force refuses it).
        podman("image", "prune", "--force", check=False)
        repo = tag.rsplit(":", 1)[0]
        old = podman("images", "--filter", "until=24h", "--format", "{{.Repository}}:{{.Tag}}", check=False)
        for ref in old.split():
            if ref.rsplit(":", 1)[0] == repo and ref != tag:
                podman("rmi", ref, check=False)
    return tag


def build_image(timeout: float = 900) -> str:
    """kafkalite's image built from this checkout on the local base; returns its reference."""
    return _build(f"{IMAGE_REPO}:{context_hash()}", REPO / "Dockerfile", REPO, timeout)


def build_client_image(timeout: float = 900) -> str:
    """An image with confluent-kafka (the version the tests use on the host), for a client
    container next to the broker's on a container network."""
    version = importlib.metadata.version("confluent-kafka")
    text = ("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n"
            "RUN python3 -m pip install --no-cache-dir --disable-pip-version-check "
            f"confluent-kafka=={version}\n")
    base_id = podman("image", "inspect", "--format", "{{.Id}}", BASE_IMAGE).strip()
    tag = f"{CLIENT_IMAGE_REPO}:{hashlib.sha256((text + base_id).encode()).hexdigest()[:16]}"
    with tempfile.TemporaryDirectory(prefix="kafkalite-client-image-") as d:
        (Path(d) / "Containerfile").write_text(text)
        return _build(tag, Path(d) / "Containerfile", Path(d), timeout)


def image_size(ref: str) -> int:
    return int(podman("image", "inspect", "--format", "{{.Size}}", ref).strip())


# --- containers ----------------------------------------------------------------------------------

def run_detached(image: str, *args: str, env: Mapping[str, str] | None = None,
                 publish: Sequence[int] = (9092,), options: Sequence[str] = ()) -> str:
    """Starts a container; its ports are published on loopback at free host ports. Returns its id."""
    cmd = ["run", "--detach"]
    for port in publish:
        cmd += ["--publish", f"127.0.0.1::{port}"]
    for key, value in (env or {}).items():
        cmd += ["--env", f"{key}={value}"]
    return podman(*cmd, *options, image, *args).strip()


def host_port(container: str, port: int = 9092) -> int:
    out = podman("port", container, f"{port}/tcp").strip().splitlines()
    return int(out[0].rsplit(":", 1)[1])


def inspect(container: str) -> dict:
    return json.loads(podman("inspect", "--type", "container", container))[0]


def logs(container: str) -> str:
    """The container's output, stdout then stderr (the broker logs on stderr)."""
    res = subprocess.run(podman_cmd("logs", container), capture_output=True, timeout=30)
    return (res.stdout + res.stderr).decode(errors="replace")


def remove(container: str) -> None:
    # --volumes: with the container, its anonymous volume (the image's VOLUME); named ones stay
    podman("rm", "--force", "--volumes", "--time", "0", container, check=False, timeout=60)


@contextlib.contextmanager
def container(image: str, *args: str, **kwargs) -> Iterator[str]:
    cid = run_detached(image, *args, **kwargs)
    try:
        yield cid
    finally:
        remove(cid)


def wait_for_log(container: str, text: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        out = logs(container)
        if text in out:
            return out
        state = inspect(container)["State"]
        if not state.get("Running"):
            raise PodmanError(f"container exited ({state.get('ExitCode')}) before logging {text!r}:\n{out[-4000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {text!r} from the container after {timeout} s:\n{out[-4000:]}")
        time.sleep(0.1)


# --- podman's Docker API ---------------------------------------------------------------------------

class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 5):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def ping(socket_path: str) -> bool:
    try:
        conn = _UnixHTTPConnection(socket_path)
        conn.request("GET", "/_ping")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


class DockerApi:
    """``podman system service`` on a unix socket: Docker's API, for testcontainers."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="kafkalite-docker-api-")
        self.socket_path = os.path.join(self.dir, "docker.sock")
        self.proc: subprocess.Popen | None = None

    @property
    def docker_host(self) -> str:
        return f"unix://{self.socket_path}"

    def start(self, timeout: float = 30) -> "DockerApi":
        self.log = open(os.path.join(self.dir, "service.log"), "wb")
        self.proc = subprocess.Popen(podman_cmd("system", "service", "--time=0", self.docker_host),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not ping(self.socket_path):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise PodmanError("podman system service did not answer /_ping:\n"
                                  + Path(self.dir, "service.log").read_text(errors="replace")[-4000:])
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
