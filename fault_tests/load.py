"""Load helpers shared by fault_tests/test_load.py and bench/faults_load.py: many idle
connections, many partitions, a client that never reads, and the broker's resource figures."""

from __future__ import annotations

import contextlib
import datetime
import resource
import selectors
import socket
import struct
import time
from typing import Iterator

import psutil

import kio.schema.api_versions.v3.request as av3
import kio.schema.create_topics.v7.request as ct7
from kafkalite.protocol.client import WireClient


def raise_fd_limit(want: int) -> int:
    """Raise this process's soft RLIMIT_NOFILE toward `want` (up to the hard limit); the broker
    started afterwards inherits it. Returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        target = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


@contextlib.contextmanager
def fd_soft_limit(limit: int) -> Iterator[None]:
    """Lower this process's soft RLIMIT_NOFILE to `limit` for the block: a broker started
    inside it inherits the limit and keeps it; this process gets its own back afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def broker_figures(pid: int) -> dict[str, int]:
    p = psutil.Process(pid)
    return {"rss": p.memory_info().rss, "fds": p.num_fds(), "threads": p.num_threads()}


def api_versions_frame(client_id: bytes = b"load", correlation_id: int = 1) -> bytes:
    """ApiVersions v3 as a client sends it first on every connection."""
    import io
    from kio.serial import entity_writer
    buf = io.BytesIO()
    buf.write(struct.pack(">hhih", 18, 3, correlation_id, len(client_id)) + client_id + b"\0")
    entity_writer(av3.ApiVersionsRequest)(buf, av3.ApiVersionsRequest(
        client_software_name="load", client_software_version="1"))
    payload = buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


def readable(socks, timeout: float) -> list:
    """The sockets with data (or EOF) to read within `timeout`. A selector (epoll), not
    select(): a test process holds descriptors past select()'s limit of 1024."""
    with selectors.DefaultSelector() as sel:
        for s in socks:
            sel.register(s, selectors.EVENT_READ)
        return [key.fileobj for key, _events in sel.select(timeout)]


def open_connections(address: str, n: int, timeout: float = 60.0) -> tuple[list[socket.socket], float]:
    """Open n connections, each answered one ApiVersions, and leave them idle and open.
    Returns the sockets and the seconds it took."""
    host, port = address.rsplit(":", 1)
    t0 = time.monotonic()
    socks = []
    frame = api_versions_frame()
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=timeout)
        s.sendall(frame)
        socks.append(s)
    pending = {s: b"" for s in socks}
    deadline = t0 + timeout
    for s in socks:
        s.setblocking(False)
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{len(pending)} of {n} connections not answered in {timeout} s")
        ready = readable(pending, min(left, 1.0))
        for s in ready:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("the broker closed an idle connection")
            buf = pending[s] + chunk
            if len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">i", buf)[0]:
                del pending[s]
            else:
                pending[s] = buf
    return socks, time.monotonic() - t0


def create_partitions(address: str, topics: list[str], partitions: int, timeout: float = 120.0) -> float:
    """CreateTopics for each topic with `partitions` partitions; returns the seconds it took."""
    t0 = time.monotonic()
    with WireClient(address, timeout=timeout) as c:
        for name in topics:
            resp = c.request(ct7.CreateTopicsRequest(
                topics=(ct7.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                                           assignments=(), configs=()),),
                timeout=datetime.timedelta(seconds=timeout), validate_only=False))
            err = resp.topics[0].error_code
            if int(err) != 0:
                raise RuntimeError(f"CreateTopics {name}: {err}")
    return time.monotonic() - t0
