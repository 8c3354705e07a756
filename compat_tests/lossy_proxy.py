"""A TCP proxy in front of one broker listener that can lose responses, the same way on any broker.

A fault for comparing brokers: kafkalite's own controls exist only on kafkalite, while this sits
on the wire, so Apache Kafka and kafkalite see the very same loss.

    proxy = LossyProxy()                            # listening on 127.0.0.1, port proxy.address
    broker = brokers.start(listeners={"LOSSY": "PLAINTEXT"}, advertised={"LOSSY": proxy.address})
    proxy.start(broker.listener("LOSSY"))           # forward to the listener's real port
    proxy.lose_responses(68, 1)                     # the next ConsumerGroupHeartbeat's response
    proxy.wait_lost(1, timeout=30)                  # -> [Exchange(..., lost=True)]
    proxy.exchanges(68)                             # every one seen, with LossyProxy(watch={68})
    proxy.close()

Rules:
- The broker advertises the proxy for that listener, so Metadata and FindCoordinator send the
  clients back through it: they reach the broker only through the proxy.
- Requests are Kafka frames: a 4-byte size, then api_key int16, api_version int16,
  correlation_id int32. Responses come back in request order, each opening with the correlation
  id; a request without a response (Produce with acks=0) is skipped by matching the id.
- "Lose the response of the next N requests of key K" (optionally only those for which
  `when(request, response)` holds, so a test can pick, say, the answer that bumps a member's
  epoch): the request is forwarded as any other, so the broker applies it; its response is read
  and not delivered, and from then on the connection is cut as by a lost packet: no later
  response is delivered and what the client sends afterwards is discarded. The client's socket
  stays open and silent, so its request times out and it reconnects (through the proxy). Each
  lost exchange is kept (Exchange) for the test to decode, and so is every exchange of a key
  in `watch`.
- PLAINTEXT only (the proxy reads frames; it does not speak TLS or SASL's raw tokens).
- Bounded: daemon threads, two per connection, at most MAX_CONNECTIONS at once; close() closes
  the listening socket and every connection, and the threads end with them.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

HOST = "127.0.0.1"
MAX_CONNECTIONS = 64
MAX_FRAME = 64 << 20  # a frame size beyond this is garbage: the connection is closed


@dataclass(frozen=True)
class Exchange:
    api_key: int
    api_version: int
    correlation_id: int
    request: bytes   # the request frame without its size: header and body
    response: bytes  # the response frame without its size: correlation id, header and body
    lost: bool       # the response was not delivered (the one chosen, or any after it)
    at: float        # time.monotonic() when the response came from the broker


# when(request frame, response frame) -> lose this one?
Choice = Callable[[bytes, bytes], bool]


class _Connection:
    """One client connection and its connection to the broker; `cut` once a lost request passed."""

    def __init__(self, proxy: "LossyProxy", client: socket.socket, broker: socket.socket):
        self.proxy, self.client, self.broker = proxy, client, broker
        self.pending: deque[tuple[int, int, int, bytes]] = deque()  # corr, key, version, request
        self.lock = threading.Lock()
        self.cut = False  # a response was lost: nothing more is delivered, nor forwarded
        self.closed = False

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for sock in (self.client, self.broker):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self.proxy._forget(self)

    def requests(self) -> None:
        """Client -> broker: note each request and forward it, until the connection is cut."""
        try:
            while True:
                frame = _read_frame(self.client)
                if frame is None:
                    return
                if self.cut:
                    continue  # the client still talks; nothing reaches the broker any more
                if len(frame) < 8:
                    return
                api_key, api_version, correlation_id = struct.unpack_from(">hhi", frame, 0)
                with self.lock:
                    self.pending.append((correlation_id, api_key, api_version, frame))
                self.broker.sendall(struct.pack(">i", len(frame)) + frame)
        except OSError:
            return
        finally:
            self.close()

    def responses(self) -> None:
        """Broker -> client: deliver each response until one is lost."""
        try:
            while True:
                frame = _read_frame(self.broker)
                if frame is None or len(frame) < 4:
                    break
                (correlation_id,) = struct.unpack_from(">i", frame, 0)
                with self.lock:
                    entry = None
                    while self.pending:
                        entry = self.pending.popleft()
                        if entry[0] == correlation_id:
                            break
                        entry = None
                if entry is not None:
                    api_key, api_version, request = entry[1], entry[2], entry[3]
                    lose = not self.cut and self.proxy._take(api_key, request, frame)
                    if lose:
                        self.cut = True
                    self.proxy._record(Exchange(api_key, api_version, correlation_id, request, frame,
                                                self.cut, time.monotonic()), lose)
                if self.cut:
                    continue
                self.client.sendall(struct.pack(">i", len(frame)) + frame)
        except OSError:
            pass
        if not self.cut:
            self.close()
        # a cut connection stays open and silent for the client until it gives up on it


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    if size < 0 or size > MAX_FRAME:
        return None
    return _read_exact(sock, size)


class LossyProxy:
    """A proxy on 127.0.0.1 that forwards every connection to one broker listener."""

    def __init__(self, watch: frozenset[int] | set[int] = frozenset()) -> None:
        """`watch`: api keys whose every exchange is kept (exchanges())."""
        self.watch = frozenset(watch)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((HOST, 0))
        self._listener.listen(16)
        self.address = f"{HOST}:{self._listener.getsockname()[1]}"
        self._target: tuple[str, int] | None = None
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._armed: dict[int, list[tuple[int, Choice | None]]] = {}  # key -> [count left, when]
        self._connections: set[_Connection] = set()
        self._closed = False
        self.lost: list[Exchange] = []  # the responses chosen to be lost
        self._exchanges: list[Exchange] = []
        self.connections_accepted = 0

    def start(self, target: str) -> "LossyProxy":
        """Forward to `target` ("host:port"); connections made before this wait in the backlog."""
        host, _, port = target.rpartition(":")
        self._target = (host.strip("[]"), int(port))
        threading.Thread(target=self._accept, daemon=True, name=f"lossy-proxy-{self.address}").start()
        return self

    def lose_responses(self, api_key: int, count: int = 1, when: Choice | None = None) -> None:
        """Lose the responses of the next `count` requests of `api_key` for which `when(request,
        response)` holds (all, without it), and cut their connections. Replaces what was armed
        for that key."""
        with self._lock:
            self._armed[api_key] = [(count, when)]

    def armed(self, api_key: int) -> int:
        """How many responses of `api_key` are still to be lost."""
        with self._lock:
            return sum(left for left, _ in self._armed.get(api_key, ()))

    def exchanges(self, api_key: int) -> list[Exchange]:
        """Every exchange of a watched key so far (and the lost ones of any key), in order."""
        with self._lock:
            return [e for e in self._exchanges if e.api_key == api_key]

    def wait_lost(self, count: int, timeout: float) -> list[Exchange]:
        """Wait until `count` responses in all have been lost; the lost ones so far."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.lost) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            return list(self.lost)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections = list(self._connections)
        self._listener.close()
        for conn in connections:
            conn.close()

    def __enter__(self) -> "LossyProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- for the connections ---
    def _take(self, api_key: int, request: bytes, response: bytes) -> bool:
        with self._lock:
            armed = self._armed.get(api_key)
            if not armed or armed[0][0] <= 0:
                return False
            left, when = armed[0]
            if when is not None and not when(request, response):
                return False
            armed[0] = (left - 1, when)
            return True

    def _record(self, exchange: Exchange, chosen: bool) -> None:
        with self._changed:
            if chosen:
                self.lost.append(exchange)
            if chosen or exchange.api_key in self.watch:
                self._exchanges.append(exchange)
            self._changed.notify_all()

    def _forget(self, conn: _Connection) -> None:
        with self._lock:
            self._connections.discard(conn)

    def _accept(self) -> None:
        assert self._target is not None
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                refuse = self._closed or len(self._connections) >= MAX_CONNECTIONS
            if refuse:
                client.close()
                continue
            try:
                broker = socket.create_connection(self._target, timeout=10)
                broker.settimeout(None)
            except OSError:
                client.close()
                continue
            for sock in (client, broker):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(self, client, broker)
            with self._lock:
                self._connections.add(conn)
                self.connections_accepted += 1
            threading.Thread(target=conn.requests, daemon=True, name="lossy-proxy-requests").start()
            threading.Thread(target=conn.responses, daemon=True, name="lossy-proxy-responses").start()
