"""Hostile frames thrown at a live broker, shared by fault_tests/test_hostile_frames.py (which
asserts the limits) and bench/hostile_frames.py (which prints the figures): frame headers that
announce 64 MiB, headers dribbled a byte a second, connections by the ten thousand; the broker's
RSS under each and a real client's round-trip latency meanwhile.

Every attack is bounded in connections and seconds, connects to loopback only and closes its
sockets when it ends.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import struct
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterator

import psutil

import kafkalite
from kafkalite.protocol.client import WireClient

from .load import api_versions_frame, fd_soft_limit, raise_fd_limit, readable

MIB = 1 << 20
# a frame header announcing 64 MiB and the first two bytes of the request (its api key)
ANNOUNCE_64_MIB = struct.pack(">i", 64 * MIB) + b"\x00\x12"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-secret";')
# a PLAINTEXT listener for the client that measures, a SASL one for the attack before authentication
LISTENERS = ["PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"]
SASL_CONFIG = {"sasl.enabled.mechanisms": "PLAIN",
               "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS}


def address(hostport: str) -> tuple[str, int]:
    host, _, port = hostport.rpartition(":")
    return host, int(port)


def rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


def wait_for(condition: Callable[[], bool], timeout: float, what: str, every: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(every)


def round_trip(bootstrap: str) -> None:
    """One ApiVersions on a new connection: the broker's loop has gone round since."""
    with WireClient(bootstrap, timeout=10) as c:
        c.send_raw(api_versions_frame()[4:])
        c.recv_frame()


@dataclass
class Figures:
    """What one attack cost: the broker's RSS before and at its height, and how the other
    connections fared."""

    name: str
    rss_before: int = 0
    rss_peak: int = 0
    closed_by_broker: int = 0
    connections: int = 0
    latencies_s: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def growth(self) -> int:
        return self.rss_peak - self.rss_before

    def line(self) -> str:
        lat = sorted(self.latencies_s)
        latency = (f"client round trip median {lat[len(lat) // 2] * 1000:.1f} ms, max {lat[-1] * 1000:.1f} ms "
                   f"({len(lat)} round trips)" if lat else "no client round trips")
        return (f"{self.name}: {self.connections} connections, RSS {self.rss_before / MIB:.1f} -> "
                f"{self.rss_peak / MIB:.1f} MiB (+{self.growth / MIB:.1f}), closed by the broker "
                f"{self.closed_by_broker}; {latency}" + "".join(f"; {n}" for n in self.notes))


def accept_queue(port: int) -> int:
    """Connections waiting in the listen queue of 127.0.0.1:`port` (/proc/net/tcp: a listening
    socket's rx_queue is its accept queue)."""
    local = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            parts = line.split()
            if parts[1] == local and parts[3] == "0A":
                return int(parts[4].split(":")[1], 16)
    raise AssertionError(f"no listening socket on 127.0.0.1:{port}")


def closed_within(socks: list[socket.socket], timeout: float) -> int:
    """How many of `socks` the broker closes (EOF or reset) within `timeout`."""
    for s in socks:
        s.setblocking(False)
    left = set(socks)
    closed = 0
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        for s in readable(left, 0.2):
            try:
                data = s.recv(1 << 16)
            except ConnectionResetError:
                data = b""
            except BlockingIOError:
                continue
            if not data:
                closed += 1
                left.discard(s)
    return closed


def announce_64_mib(broker: kafkalite.Broker, listener: str, n: int = 4, close_timeout: float = 0.0) -> Figures:
    """`n` connections each send a header announcing 64 MiB and two bytes more, then nothing.
    The peak RSS is taken once the broker has read every header (a later connection of the same
    listener is answered) and, with `close_timeout`, after waiting that long for the broker to
    close them."""
    fig = Figures(f"{n} x 64 MiB frame header on {listener}", connections=n)
    pid = broker.pid
    round_trip(broker.bootstrap)
    fig.rss_before = rss(pid)
    socks = [socket.create_connection(address(broker.listeners[listener]), timeout=10) for _ in range(n)]
    try:
        for s in socks:
            s.sendall(ANNOUNCE_64_MIB)
        round_trip(broker.bootstrap)
        fig.rss_peak = rss(pid)
        if close_timeout:
            fig.closed_by_broker = closed_within(socks, close_timeout)
        fig.rss_peak = max(fig.rss_peak, rss(pid))
    finally:
        for s in socks:
            s.close()
    return fig


class Producer:
    """A real client (confluent-kafka) producing one record at a time and waiting for its
    acknowledgement, timing each round trip."""

    def __init__(self, bootstrap: str):
        from confluent_kafka import Producer as RdProducer

        self.topic = f"hostile-{uuid.uuid4().hex[:8]}"
        self.producer = RdProducer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all",
                                    "message.timeout.ms": 30000})
        self.errors: list[str] = []
        self.round_trip()  # the topic is created and metadata known before timing starts

    def round_trip(self) -> float:
        got: list[object] = []
        t0 = time.monotonic()
        self.producer.produce(self.topic, b"v", on_delivery=lambda err, msg: got.append(err))
        self.producer.flush(30)
        took = time.monotonic() - t0
        if got != [None]:
            self.errors.append(f"delivery: {got}")
        return took

    def close(self) -> None:
        self.producer.flush(10)


def dribble_headers(broker: kafkalite.Broker, n: int = 1000, seconds: float = 4.0) -> Figures:
    """`n` connections each send a frame header one byte a second for `seconds` (a slow-loris
    client), while a real client produces record after record; the broker must answer it
    meanwhile."""
    fig = Figures(f"{n} connections dribbling a frame header a byte a second for {seconds:.0f} s", connections=n)
    raise_fd_limit(n + 512)
    pid = broker.pid
    producer = Producer(broker.bootstrap)
    fig.rss_before = rss(pid)
    socks = [socket.create_connection(address(broker.bootstrap), timeout=10) for _ in range(n)]
    stop = threading.Event()
    header = struct.pack(">i", 1 * MIB)

    def dribble() -> None:
        for i in range(int(seconds)):
            for s in socks:
                with contextlib.suppress(OSError):
                    s.send(header[i % 4 : i % 4 + 1])
            if stop.wait(1.0):
                return

    dribbler = threading.Thread(target=dribble, daemon=True)
    dribbler.start()
    try:
        while dribbler.is_alive():
            fig.latencies_s.append(producer.round_trip())
            fig.rss_peak = max(fig.rss_peak, rss(pid))
    finally:
        stop.set()
        dribbler.join()
        for s in socks:
            s.close()
        producer.close()
    fig.notes += producer.errors
    return fig


@contextlib.contextmanager
def broker_with_fd_limit(limit: int, **settings) -> Iterator[kafkalite.Broker]:
    """A broker whose soft RLIMIT_NOFILE is `limit` (set in this process while it starts; the
    broker keeps it, this process gets its own back)."""
    with fd_soft_limit(limit):
        broker = kafkalite.start(**settings)
    try:
        yield broker
    finally:
        broker.close()


def connection_flood(broker: kafkalite.Broker, n: int = 10_000, seconds: float = 5.0) -> Figures:
    """`n` connections opened at once (non-blocking connects: past the listen queue the kernel
    drops them) against a broker with fewer descriptors; they are held `seconds` at most (until
    the broker logs the shortage), then closed, and a real client must then be served."""
    fig = Figures(f"{n} connections opened at once", connections=n)
    raise_fd_limit(n + 512)
    pid = broker.pid
    producer = Producer(broker.bootstrap)
    fig.rss_before = rss(pid)
    fds_before = psutil.Process(pid).num_fds()
    host, port = address(broker.bootstrap)
    socks: list[socket.socket] = []
    refused = 0
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            code = s.connect_ex((host, port))
            if code not in (0, errno.EINPROGRESS):
                refused += 1
            socks.append(s)
        # the connections the broker has are served while it is out of descriptors
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and "out of file descriptors while accepting connections" not in broker.log_text():
            fig.latencies_s.append(producer.round_trip())
            fig.rss_peak = max(fig.rss_peak, rss(pid))
        fig.latencies_s.append(producer.round_trip())
        fig.rss_peak = max(fig.rss_peak, rss(pid))
        fig.notes.append(f"broker descriptors at the height {psutil.Process(pid).num_fds()}")
    finally:
        for s in socks:
            s.close()
    if refused:
        fig.notes.append(f"{refused} connects refused at once")
    # once the flood is gone the broker accepts and closes what the listen queue still held, and
    # a new connection is answered (connecting sooner, its SYN could find the queue full and
    # wait for the kernel's retransmission, seconds later)
    t0 = time.monotonic()
    # (read a few times a second: /proc/net/tcp lists every socket of the flood)
    wait_for(lambda: accept_queue(port) == 0, 60, "the listen queue drained", every=0.25)
    wait_for(lambda: psutil.Process(pid).num_fds() <= fds_before + 8, 60, "the flood's connections closed")
    fig.notes.append(f"the broker closed the flood's connections in {time.monotonic() - t0:.2f} s")
    t0 = time.monotonic()
    round_trip(broker.bootstrap)
    fig.notes.append(f"a new connection answered in {(time.monotonic() - t0) * 1000:.1f} ms")
    fig.latencies_s.append(producer.round_trip())
    producer.close()
    fig.notes += producer.errors
    return fig
