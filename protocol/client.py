"""A minimal blocking Kafka protocol client (for tests, benchmarks and health checks).

It sends any kio request entity and decodes the matching response; nothing more. Real
clients are what the compatibility suite uses; this one exists to speak to the broker at the
protocol level (bad input, exact error codes, health checks).
"""

from __future__ import annotations

import io
import socket
import ssl
import struct
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

from .messages import _skip_tagged_fields


class WireClient:
    def __init__(self, address: str, timeout: float = 10.0, client_id: str = "kafkalite-wire",
                 ssl_context: ssl.SSLContext | None = None):
        host, _, port = address.rpartition(":")
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        # a TLS listener (SSL, SASL_SSL): the handshake happens here
        self.sock = ssl_context.wrap_socket(sock, server_hostname=host.strip("[]")) if ssl_context else sock
        self.client_id = client_id
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "WireClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv_exact(4))[0]
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def encode(self, request: Any, correlation_id: int) -> bytes:
        rtype = type(request)
        buf = io.BytesIO()
        buf.write(struct.pack(">hhi", rtype.__api_key__, rtype.__version__, correlation_id))
        cid = self.client_id.encode()
        buf.write(struct.pack(">h", len(cid)) + cid)
        if rtype.__flexible__:
            buf.write(b"\0")
        entity_writer(rtype)(buf, request)
        return buf.getvalue()

    def request(self, request: Any) -> Any:
        """Send one request and return the decoded response."""
        self.correlation_id += 1
        cid = self.correlation_id
        self.send_raw(self.encode(request, cid))
        frame = self.recv_frame()
        return decode_response(type(request).__api_key__, type(request).__version__, frame, cid)

    def send_only(self, request: Any) -> None:
        self.correlation_id += 1
        self.send_raw(self.encode(request, self.correlation_id))


def decode_response(api_key: int, version: int, frame: bytes, expected_correlation_id: int | None = None) -> Any:
    rtype = load_response_schema(api_key, version)
    (cid,) = struct.unpack_from(">i", frame, 0)
    if expected_correlation_id is not None and cid != expected_correlation_id:
        raise ValueError(f"correlation id {cid} != {expected_correlation_id}")
    pos = 4
    if rtype.__flexible__ and api_key != 18:
        pos = _skip_tagged_fields(frame, pos)
    body, _ = entity_reader(rtype)(frame, pos)
    return body
