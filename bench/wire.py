"""A minimal blocking Kafka wire client for benchmarks: ApiVersions and Metadata through kio.

Used to tell when a broker answers (readiness) and to time process start to the first
answered Metadata request. Everything is encoded and decoded with kio
(``kio.serial.entity_writer`` / ``entity_reader``, schemas from ``kio.index``); only the
4-byte size prefix is done by hand.
"""

from __future__ import annotations

import io
import socket
import struct
import time
from dataclasses import dataclass

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

API_VERSIONS = 18
METADATA = 3
# The highest Metadata version kio knows; we use min(this, broker's max).
KIO_MAX_METADATA = 12
CLIENT_ID = "kafkalite-bench"


class WireError(RuntimeError):
    pass


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise WireError("connection closed by broker")
        buf += chunk
    return bytes(buf)


@dataclass
class Connection:
    sock: socket.socket
    correlation_id: int = 0

    @classmethod
    def open(cls, host: str, port: int, timeout: float = 5.0) -> "Connection":
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, api_key: int, version: int, **fields: object) -> object:
        """Send one request and return the decoded response entity."""
        req_type = load_request_schema(api_key, version)
        resp_type = load_response_schema(api_key, version)
        self.correlation_id += 1
        header_type = req_type.__header_schema__
        header = header_type(
            request_api_key=i16(api_key),
            request_api_version=i16(version),
            correlation_id=i32(self.correlation_id),
            client_id=CLIENT_ID,
        )
        body = io.BytesIO()
        entity_writer(header_type)(body, header)
        entity_writer(req_type)(body, req_type(**fields))
        payload = body.getvalue()
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

        (size,) = struct.unpack(">i", _recv_exact(self.sock, 4))
        data = _recv_exact(self.sock, size)
        resp_header, offset = entity_reader(resp_type.__header_schema__)(data, 0)
        if resp_header.correlation_id != self.correlation_id:
            raise WireError(f"correlation id {resp_header.correlation_id} != {self.correlation_id}")
        response, _ = entity_reader(resp_type)(data, offset)
        return response

    def api_versions(self) -> dict[int, tuple[int, int]]:
        resp = self.request(API_VERSIONS, 0)
        if int(resp.error_code) != 0:
            raise WireError(f"ApiVersions error {resp.error_code!r}")
        return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys}

    def metadata(self, version: int) -> object:
        fields: dict[str, object] = {"topics": None}
        req_type = load_request_schema(METADATA, version)
        names = set(req_type.__dataclass_fields__)
        if "allow_auto_topic_creation" in names:
            fields["allow_auto_topic_creation"] = False
        if "include_topic_authorized_operations" in names:
            fields["include_topic_authorized_operations"] = False
        if "include_cluster_authorized_operations" in names:
            fields["include_cluster_authorized_operations"] = False
        return self.request(METADATA, version, **fields)


def first_metadata(host: str, port: int) -> object:
    """ApiVersions, then Metadata at the highest version both sides know. Raises on failure."""
    with Connection.open(host, port) as conn:
        versions = conn.api_versions()
        lo, hi = versions.get(METADATA, (0, 0))
        version = min(hi, KIO_MAX_METADATA)
        if version < lo:
            raise WireError(f"no common Metadata version (broker {lo}-{hi})")
        return conn.metadata(version)


def wait_for_metadata(host: str, port: int, timeout: float, poll_interval: float = 0.002,
                      alive=lambda: True) -> float:
    """Poll connect + ApiVersions + Metadata until answered; return monotonic time of the answer.

    ``alive`` is called between attempts; when it returns False the wait is abandoned.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            first_metadata(host, port)
            return time.monotonic()
        except (OSError, WireError, struct.error) as exc:
            last_error = exc
        if not alive():
            raise WireError(f"broker process exited before answering ({last_error!r})")
        time.sleep(poll_interval)
    raise WireError(f"no Metadata answer from {host}:{port} within {timeout}s ({last_error!r})")
