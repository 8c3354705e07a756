"""The trio server: listeners, one task per connection, dispatch.

Requests of one connection are handled one at a time and answered in order (Kafka mutes a
connection while it works on a request); the answer to a Produce request whose successor
Produce is already received waits for it, and such answers leave in one send (at most
COALESCE_MAX). A frame larger than socket.request.max.bytes, an
undecodable request or an API version we do not serve closes that connection with a log
line; the broker goes on serving every other connection. ApiVersions with a version we do
not know is answered in the v0 format with UNSUPPORTED_VERSION, as Kafka does.

With `nodes` > 1 every node id gets its own port on every listener (the first node the
configured port, the others the next ports up, or free ones when 0 was asked for); a request
is handled as the node whose port it came in on (`RequestContext.node_id`). A node taken down
(`Broker.node_down`) closes its listening sockets and its open connections; `node_up` binds
the same ports again.
Each listener speaks its security protocol (broker.security): TLS listeners wrap the accepted
socket in a trio.SSLStream (a handshake not finished within ssl.handshake.timeout.ms closes
the connection; it holds up no other connection); on SASL listeners a connection may send
only ApiVersions (once) and SaslHandshake, then SaslAuthenticate (or, after a v0 handshake,
bare SASL tokens), until it is authenticated (broker.sasl), and anything else closes it with a
log line, as Kafka does (once SaslAuthenticate is due, after answering ILLEGAL_SASL_STATE). A request after
the SASL session expired (KIP-368) closes the connection unless it is the SaslHandshake that
starts re-authentication. Every request's context carries the connection's principal.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import socket
import struct
import time
from types import SimpleNamespace
from dataclasses import dataclass, field
from typing import Callable

import trio

from kio.schema.errors import ErrorCode
from kafkalite.protocol.apis import API_TABLE, ApiRange
from kafkalite.protocol.messages import (
    MalformedRequest, encode_response, encode_response_chunks, parse_request, peek_header,
)
from kafkalite.protocol.regions import Chunk, FileRegion

from .authorizer import Authorizer
from .authorizer import from_config as authorizer_from_config
from .clock import CLOCK, JumpTimer, now_ms
from .cluster import Cluster
from .config import BrokerConfig, Listener
from .credentials import ScramStore
from .sasl import API_SASL_HANDSHAKE, API_VERSIONS, SaslFailed, SaslSession
from .security import ANONYMOUS, ListenerSecurity, build as build_security, certificate_subject, principal_from_dn
from .handlers import HANDLERS, load_all
from .handlers.common import CloseConnection
from .metrics import Metrics
from .quotas import ClientQuotas
from .dynamic_configs import DynamicBrokerConfigs
from .features import Features
from .reassignments import Reassignments
from .delegation_tokens import DelegationTokens
from .telemetry import TELEMETRY_APIS, ClientTelemetry
from . import throttling
from .services import Services, Wiring
from .fetch_sessions import FetchSessionCache
from .kafka_versions import KafkaRelease
from .kafka_versions import release as kafka_release

log = logging.getLogger("kafkalite.server")
_SIZE = struct.Struct(">i")
_API_KEY = struct.Struct(">h")
API_PRODUCE = 0
# answers to pipelined Produce requests held back to go out in one send (see serve_connection)
COALESCE_MAX = 8


@dataclass
class Broker:
    """Everything a handler may reach: configuration, cluster, coordinators."""

    config: BrokerConfig
    cluster: Cluster
    # bound listeners (real ports once bound) and what each advertises
    listeners: list[Listener] = field(default_factory=list)
    advertised: dict[str, Listener] = field(default_factory=dict)
    # the coordinators, each built once when first needed (broker.services)
    services: Services = field(init=False)
    # the ACLs and the rule (broker.authorizer); None when authorizer.class.name is not set
    authorizer: Authorizer | None = field(init=False)
    started_ms: int = field(default_factory=now_ms)
    metrics: Metrics = field(default_factory=Metrics)
    # incremental fetch sessions (KIP-227); made from the config in __post_init__
    fetch_sessions: FetchSessionCache = field(init=False)
    # the controls endpoint's URL once it serves (--controls), else None
    controls_url: str | None = None
    # armed faults by api key (broker.controls.faults); empty unless a test arms one
    faults: dict[int, list] = field(default_factory=dict)
    # the Kafka release imitated (--kafka-version) and the version ranges advertised and served:
    # the API table, or its intersection with that release's
    release: KafkaRelease | None = field(init=False)
    api_ranges: dict[int, ApiRange] = field(init=False)
    # node id -> listener name -> the address clients are told for that node (node_id's is `advertised`)
    node_advertised: dict[int, dict[str, Listener]] = field(default_factory=dict)
    # node id -> its bound listeners (the real ports), bound again by node_up
    node_listeners: dict[int, list[Listener]] = field(default_factory=dict)
    _node_scopes: dict[int, trio.CancelScope] = field(default_factory=dict)
    _nursery: trio.Nursery | None = None
    # listener name -> its security (protocol, TLS context, SASL mechanisms)
    security: dict[str, ListenerSecurity] = field(default_factory=dict)
    # SCRAM credentials (data dir), read by SCRAM authentication and the credential APIs
    scram: ScramStore = field(init=False)
    # client quotas (AlterClientQuotas) and their sensors (broker.quotas, broker.throttling)
    quotas: ClientQuotas = field(init=False)
    # dynamic broker configs (broker.dynamic_configs): per broker and cluster default
    dynamic_configs: DynamicBrokerConfigs = field(init=False)
    # supported and finalized feature levels (broker.features), changed by UpdateFeatures
    features: Features = field(init=False)
    # partition reassignments in progress and leader elections (broker.reassignments)
    reassignments: Reassignments = field(init=False)
    # delegation tokens (broker.delegation_tokens), which SCRAM authentication also reads
    delegation_tokens: DelegationTokens = field(init=False)
    # client-metrics subscriptions and the telemetry clients pushed (broker.telemetry)
    telemetry: ClientTelemetry = field(init=False)
    # API keys served but left out of ApiVersions (the telemetry APIs, as Kafka without a receiver)
    unadvertised: frozenset[int] = field(init=False)

    def __post_init__(self) -> None:
        self.authorizer = authorizer_from_config(self.config, self.cluster.data_dir)
        self.fetch_sessions = FetchSessionCache(self.config["max.incremental.fetch.session.cache.slots"],
                                                self.config["min.incremental.fetch.session.eviction.ms"])
        self.scram = ScramStore(self.config.data_dir)
        self.quotas = ClientQuotas(self.cluster.meta_dir)
        self.dynamic_configs = DynamicBrokerConfigs(self.cluster.meta_dir, self.config, self.cluster.node_id)
        version = self.config.kafka_version
        self.release = None if version is None else kafka_release(version)
        self.api_ranges = API_TABLE if self.release is None else self.release.api_ranges()
        self.features = Features(self.cluster.meta_dir, self.config, self.release, self.cluster.node_id)
        self.reassignments = Reassignments(self.cluster)
        self.delegation_tokens = DelegationTokens(self.cluster.meta_dir, self.config["delegation.token.secret.key"],
                                                  self.config["delegation.token.max.lifetime.ms"],
                                                  self.config["delegation.token.expiry.time.ms"])
        self.scram.tokens = self.delegation_tokens
        self.telemetry = ClientTelemetry(self.cluster.meta_dir)
        self.unadvertised = frozenset() if self.config["client.telemetry.enable"] else TELEMETRY_APIS

    def address_of(self, node: int, listener_name: str) -> Listener:
        """Where a client on `listener_name` reaches `node`."""
        return self.node_advertised[node][listener_name]

    async def node_down(self, node: int) -> None:
        """Close the node's listening sockets and every connection it holds."""
        scope = self._node_scopes.pop(node, None)
        if scope is not None:
            scope.cancel()
            await trio.lowlevel.checkpoint()

    async def node_up(self, node: int) -> None:
        """Bind the node's ports again; returns once they accept connections."""
        if node in self._node_scopes or self._nursery is None:
            return
        await self._nursery.start(_serve_node, self, node, [(lis, lis.port) for lis in self.node_listeners[node]])


class Connection:
    """One client connection's security state."""

    __slots__ = ("security", "principal", "sasl", "close_after_response")

    def __init__(self, security: ListenerSecurity, principal: str = ANONYMOUS, sasl: SaslSession | None = None):
        self.security = security
        # Kafka's principal string: User:ANONYMOUS until SASL authenticates, or a TLS client
        # certificate's subject mapped by ssl.principal.mapping.rules
        self.principal = principal
        self.sasl = sasl
        # set by a handler whose answer is the last on this connection (a failed authentication)
        self.close_after_response: str | None = None


class RequestContext:
    __slots__ = ("broker", "header", "listener", "peer", "node_id", "conn", "principal", "regions")

    def __init__(self, broker: Broker, header, listener: Listener, peer: str, node_id: int | None = None,
                 conn: Connection | None = None):
        self.broker = broker
        self.header = header
        self.listener = listener
        self.peer = peer
        # the node whose port the request came in on
        self.node_id = broker.cluster.node_id if node_id is None else node_id
        self.conn = conn
        # Kafka's principal of the request (User:alice, User:ANONYMOUS, User:CN=...)
        self.principal = conn.principal if conn is not None else ANONYMOUS
        # file regions the response carries (Fetch): sent from the file, released after sending
        self.regions: list[FileRegion] = []

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @property
    def cluster(self) -> Cluster:
        return self.broker.cluster


class ConnectionClosed(Exception):
    pass


class FrameReader:
    """Reads size-prefixed frames straight from the socket.

    Small frames are read-only views into one reusable receive buffer, valid until the next
    read_frame (requests of a connection are handled one at a time, and kio copies what it
    decodes out of the frame); a frame larger than that buffer is received directly into a
    buffer of its own size. Either way the request's bytes are not copied before kio reads them.
    """

    BUFFER_SIZE = 256 * 1024
    # once the buffer is drained after holding more than this, its pages go back to the kernel
    # (madvise DONTNEED): a connection that sent one large batch and went idle costs a page or
    # two again, not the 256 KiB it touched
    RELEASE_ABOVE = 64 * 1024

    def __init__(self, sock, max_size: int):
        # a socket, or anything with an async recv_into (StreamSource over a TLS stream)
        self.sock = sock
        self.max_size = max_size
        # anonymous mmap, not bytearray: its zero pages are only backed by memory once data
        # lands in them, so an idle connection costs a page or two, not the whole buffer
        self.buf = mmap.mmap(-1, self.BUFFER_SIZE)
        self.view = memoryview(self.buf)
        self.start = 0
        self.end = 0

    async def _receive_more(self) -> None:
        if self.start == self.end:
            if self.end > self.RELEASE_ABOVE:
                self.buf.madvise(mmap.MADV_DONTNEED, 0, self.end - self.end % mmap.PAGESIZE)
            self.start = self.end = 0
        elif self.end == len(self.buf):
            pending = self.end - self.start
            self.buf[:pending] = self.buf[self.start : self.end]
            self.start, self.end = 0, pending
        n = await self.sock.recv_into(self.view[self.end :])
        if not n:
            raise ConnectionClosed()
        self.end += n

    def buffered_api_key(self) -> int | None:
        """The api key of the next request when the whole of it is already received, else None."""
        have = self.end - self.start
        if have < 6:
            return None
        (size,) = _SIZE.unpack_from(self.buf, self.start)
        if size < 2 or have - 4 < size:
            return None
        return _API_KEY.unpack_from(self.buf, self.start + 4)[0]

    async def read_frame(self) -> bytes | memoryview:
        while self.end - self.start < 4:
            await self._receive_more()
        (size,) = _SIZE.unpack_from(self.buf, self.start)
        if size < 0 or size > self.max_size:
            raise MalformedRequest(f"frame of {size} bytes exceeds socket.request.max.bytes={self.max_size}")
        if size <= len(self.buf) - 4:
            while self.end - self.start - 4 < size:
                await self._receive_more()
            body_start = self.start + 4
            self.start = body_start + size
            return self.view[body_start : body_start + size].toreadonly()
        body_start = self.start + 4
        frame: bytearray = bytearray(size)
        have = self.end - body_start
        frame[:have] = self.view[body_start : self.end]
        self.start = self.end = 0
        fview = memoryview(frame)
        while have < size:
            n = await self.sock.recv_into(fview[have:])
            if not n:
                raise ConnectionClosed()
            have += n
        # kio's native readers take read-only buffers only
        return memoryview(frame).toreadonly()


class StreamSource:
    """recv_into over a trio stream (a TLS stream has no socket to read from)."""

    def __init__(self, stream: trio.abc.ReceiveStream):
        self.stream = stream

    async def recv_into(self, view: memoryview) -> int:
        data = await self.stream.receive_some(len(view))
        n = len(data)
        view[:n] = data
        return n


async def send_chunks(stream, chunks: list[Chunk]) -> int:
    """Send a response made of bytes and file regions, in order; returns the bytes sent.
    Regions go out with os.sendfile when the stream is a plain TCP socket (the record data
    never enters Python), and are read and sent like bytes on any other stream (TLS)."""
    sock = stream.socket if type(stream) is trio.SocketStream else None
    total = 0
    if sock is None:
        for c in chunks:
            data = c.read() if type(c) is FileRegion else c
            await stream.send_all(data)
            total += len(data)
        return total
    # no TCP_CORK around the chunks: uncorking did not push the tail out at once here (a
    # consumer waited ~200 ms per response); with TCP_NODELAY the header bytes go out alone
    out = sock.fileno()
    await trio.lowlevel.checkpoint_if_cancelled()
    for c in chunks:
        if type(c) is FileRegion:
            await _sendfile(sock, out, c)
        else:
            await _write(sock, out, c)
        total += len(c)
    await trio.lowlevel.cancel_shielded_checkpoint()
    return total


async def _write(sock, out: int, data) -> None:
    """os.write to the socket's descriptor until all of `data` is sent (the few header bytes
    between regions: trio's send_all costs more than the write itself)."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(out, view)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        view = view[n:]


async def _sendfile(sock, out: int, region: FileRegion) -> None:
    offset, left = region.offset, region.length
    while left:
        try:
            n = os.sendfile(out, region.fd, offset, left)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        if n == 0:
            # the file is shorter than the region: the response cannot be completed
            raise RuntimeError(f"{region!r}: the file ended {left} bytes early")
        offset += n
        left -= n


def unsupported_api_versions(broker: Broker, correlation_id: int) -> bytes:
    from .handlers.api_versions import build

    body = build(0, SimpleNamespace(broker=broker), ErrorCode.unsupported_version)
    return encode_response(18, 0, correlation_id, body)


def _enum_name(api_name: str) -> str:
    """Kafka's ApiKeys constant for an API (ListGroups -> LIST_GROUPS), as its messages print it."""
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(api_name)).upper()


async def _answer_illegal_sasl_state(broker: Broker, out_stream, frame, header, hsize: int) -> None:
    """What Kafka's SaslServerAuthenticator sends, before closing, to a request other than
    SaslAuthenticate once a mechanism is chosen: the request's error response with
    ILLEGAL_SASL_STATE. A version we do not serve or an undecodable request gets no answer."""
    rng = broker.api_ranges.get(header.api_key)
    if rng is None or not rng.serves(header.api_version):
        return
    try:
        request = parse_request(frame, header, hsize)
    except MalformedRequest:
        return
    from kafkalite.protocol.error_responses import error_response

    message = f"Unexpected Kafka request of type {_enum_name(rng.name)} during SASL authentication."
    body = error_response(header.api_key, header.api_version, request, ErrorCode.illegal_sasl_state, message)
    await out_stream.send_all(encode_response(header.api_key, header.api_version, header.correlation_id, body))


async def _tls_handshake(broker: Broker, stream: trio.SocketStream, security: ListenerSecurity,
                         peer: str) -> tuple[trio.SSLStream, str] | None:
    """Wrap the connection in TLS; the stream and the principal its client certificate maps to
    (ANONYMOUS without one), or None when the handshake failed or took too long."""
    assert security.ssl_context is not None
    tls = trio.SSLStream(stream, security.ssl_context, server_side=True)
    timeout = broker.config["ssl.handshake.timeout.ms"] / 1000
    try:
        with trio.fail_after(timeout):
            await tls.do_handshake()
    except trio.TooSlowError:
        log.info("closing connection from %s on %s: TLS handshake not finished within %.1f s",
                 peer, security.name, timeout)
        return None
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        cause = exc.__cause__ or exc
        log.info("closing connection from %s on %s: TLS handshake failed: %s", peer, security.name, cause)
        return None
    principal = ANONYMOUS
    der = tls.getpeercert(binary_form=True)
    if der:
        principal = principal_from_dn(certificate_subject(der), security.mapping_rules)
    log.debug("TLS connection from %s on %s: principal %s", peer, security.name, principal)
    return tls, principal


async def serve_connection(broker: Broker, stream: trio.SocketStream, listener: Listener,
                           node_id: int | None = None) -> None:
    try:
        peer = "%s:%s" % stream.socket.getpeername()[:2]
    except OSError:
        peer = "?"
    log.debug("connection opened from %s on %s", peer, listener.name)
    metrics = broker.metrics
    metrics.connections_opened += 1
    security = broker.security.get(listener.name) or ListenerSecurity(listener.name)
    out_stream: trio.abc.Stream = stream
    principal = ANONYMOUS
    if security.tls:
        done = await _tls_handshake(broker, stream, security, peer)
        if done is None:
            metrics.connections_closed += 1
            with trio.move_on_after(0):
                await stream.aclose()
            return
        out_stream, principal = done
        reader = FrameReader(StreamSource(out_stream), broker.config["socket.request.max.bytes"])
    else:
        reader = FrameReader(stream.socket, broker.config["socket.request.max.bytes"])
    sasl = SaslSession(security, broker.scram) if security.sasl else None
    conn = Connection(security, principal, sasl)
    # Produce answers not sent yet: while the next Produce request of a pipelining client
    # (max.in.flight > 1) is already received, its predecessor's answer waits for it, and the
    # answers leave together in one send, in order (a send, and the wake-up it costs the client,
    # is the largest cost of a produce request after the log write). Only Produce after Produce
    # is held: that handler never waits for other clients (a Fetch may wait max_wait_ms), so an
    # answer is held back at most for the handling of COALESCE_MAX - 1 received requests.
    # Not on SASL listeners (their sends follow the authentication state) nor with test faults armed.
    pending: list[bytes] = []
    coalesce = sasl is None
    try:
        while True:
            frame = await reader.read_frame()
            t0 = time.monotonic()
            if sasl is not None and sasl.expects_raw_token:
                try:
                    token, _lifetime = sasl.authenticate(bytes(frame))
                except SaslFailed as exc:
                    log.info("closing connection from %s on %s: SASL %s authentication failed: %s",
                             peer, listener.name, sasl.mechanism_name, exc)
                    return
                await out_stream.send_all(_SIZE.pack(len(token)) + token)
                if sasl.authenticated:
                    conn.principal = sasl.principal or ANONYMOUS
                continue
            header, hsize = peek_header(frame)
            if sasl is not None:
                if sasl.authenticated:
                    if header.api_key == API_SASL_HANDSHAKE and sasl.may_begin_reauthentication(t0):
                        sasl.begin_reauthentication(t0)
                    elif sasl.expired(t0):
                        log.info("closing connection from %s (client %r, %s): its SASL session expired",
                                 peer, header.client_id, sasl.principal)
                        return
                refusal = sasl.refusal(header.api_key)
                if refusal is not None:
                    log.warning("closing connection from %s on %s (client %r): %s",
                                peer, listener.name, header.client_id, refusal)
                    if sasl.answers_before_closing(header.api_key):
                        await _answer_illegal_sasl_state(broker, out_stream, frame, header, hsize)
                    return
            rng = broker.api_ranges.get(header.api_key)
            if rng is None or not rng.serves(header.api_version):
                if header.api_key == 18:
                    await out_stream.send_all(unsupported_api_versions(broker, header.correlation_id))
                    continue
                log.warning("closing connection from %s: api key %d version %d is not served (client %r)",
                            peer, header.api_key, header.api_version, header.client_id)
                return
            try:
                request = parse_request(frame, header, hsize)
            except MalformedRequest as exc:
                metrics.record_error(header.api_key, t0, len(frame) + 4)
                log.warning("closing connection from %s: undecodable %s v%d request (client %r): %s",
                            peer, rng.name, header.api_version, header.client_id, exc)
                return
            if sasl is not None and header.api_key == API_VERSIONS and not sasl.authenticated:
                sasl.state = "HANDSHAKE_REQUEST"  # one ApiVersions before the handshake, as Kafka
            ctx = RequestContext(broker, header, listener, peer, node_id, conn)
            fault = None
            throttle_ms = 0
            armed = broker.faults.get(header.api_key)
            if armed:
                from .controls import faults

                fault = faults.take(broker, armed, ctx, request)
            try:
                try:
                    if fault is None or fault.action in ("drop", "delay"):
                        response = await HANDLERS[header.api_key](ctx, request)
                    else:
                        response = faults.answer(ctx, request, fault)
                    out: bytes | list[Chunk] | None = None
                    if response is not None:
                        encode = encode_response_chunks if ctx.regions else encode_response
                        out = encode(header.api_key, header.api_version, header.correlation_id, response)
                    if broker.quotas.enforcing:
                        out, throttle_ms = throttling.apply(ctx, request, response, out, len(frame) + 4, t0)
                except CloseConnection as exc:
                    metrics.record(header.api_key, t0, len(frame) + 4, 0)
                    log.info("closing connection from %s (client %r): %s", peer, header.client_id, exc)
                    return
                except Exception:
                    metrics.record_error(header.api_key, t0, len(frame) + 4)
                    log.exception("error handling %s v%d from %s (client %r); closing the connection",
                                  rng.name, header.api_version, peer, header.client_id)
                    return
                if fault is not None:
                    if pending:
                        await _send_pending(out_stream, pending)
                    if fault.action == "drop":
                        metrics.record(header.api_key, t0, len(frame) + 4, 0)
                        log.info("dropped the response to %s v%d from %s (client %r); the connection now "
                                 "ignores what it receives", rng.name, header.api_version, peer, header.client_id)
                        while True:
                            await reader.read_frame()
                    if fault.delay_ms and not await _hold(stream, fault.delay_ms / 1000):
                        log.info("the client from %s closed the connection before the delayed response to "
                                 "%s v%d (client %r)", peer, rng.name, header.api_version, header.client_id)
                        return
                if out is None:
                    metrics.record(header.api_key, t0, len(frame) + 4, 0)
                elif isinstance(out, list):
                    if pending:
                        await _send_pending(out_stream, pending)
                    sent = await send_chunks(out_stream, out)
                    metrics.record(header.api_key, t0, len(frame) + 4, sent)
                elif throttle_ms:
                    await out_stream.send_all(b"".join(pending) + out)
                    pending.clear()
                    metrics.record(header.api_key, t0, len(frame) + 4, len(out))
                elif pending or (coalesce and header.api_key == API_PRODUCE and not broker.faults):
                    pending.append(out)
                    metrics.record(header.api_key, t0, len(frame) + 4, len(out))
                else:
                    await out_stream.send_all(out)
                    metrics.record(header.api_key, t0, len(frame) + 4, len(out))
                if pending and (len(pending) >= COALESCE_MAX or reader.buffered_api_key() != API_PRODUCE):
                    await _send_pending(out_stream, pending)
            finally:
                for region in ctx.regions:
                    region.release()
            if throttle_ms and not await _hold(stream, throttle_ms / 1000):
                return  # muted while throttled, as Kafka mutes a throttled channel
            if conn.close_after_response is not None:
                log.info("closing connection from %s on %s (client %r): %s",
                         peer, listener.name, header.client_id, conn.close_after_response)
                return
            if sasl is not None and sasl.authenticated:
                conn.principal = sasl.principal or ANONYMOUS
    except ConnectionClosed:
        pass
    except MalformedRequest as exc:
        log.warning("closing connection from %s: %s", peer, exc)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass
    except Exception:
        # whatever goes wrong with one connection must not reach the listener and stop the broker
        log.exception("closing connection from %s after an unexpected error", peer)
    finally:
        if pending:
            # answers to requests handled before the connection ends still go out, as Kafka's
            # would; shielded (and bounded) so that a cancelled connection still runs the rest
            with trio.move_on_after(1) as flush_scope:
                flush_scope.shield = True
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    await _send_pending(out_stream, pending)
        metrics.connections_closed += 1
        log.debug("connection closed from %s on %s", peer, listener.name)
        # share sessions die with their connection, as in Kafka's share session cache
        share = broker.services.existing("share")
        if share is not None:
            share.connection_closed(peer)
        with trio.move_on_after(0):
            await out_stream.aclose()


async def _send_pending(stream, pending: list[bytes]) -> None:
    """Send the held-back answers in one piece, in order, and forget them."""
    data = b"".join(pending)
    pending.clear()
    await stream.send_all(data)


async def _hold(stream: trio.SocketStream, seconds: float) -> bool:
    """Wait `seconds` before a delayed response (delay-responses); False as soon as the client
    closes the connection meanwhile (a client whose request timed out gives up on it)."""
    deadline = trio.current_time() + seconds
    sock = stream.socket
    with trio.move_on_at(deadline):
        await trio.lowlevel.wait_readable(sock)
        try:
            if not await sock.recv(1, socket.MSG_PEEK):
                return False
        except ConnectionError:
            return False
        # a pipelined request: it waits its turn
        await trio.sleep_until(deadline)
    return True


async def serve(config: BrokerConfig, *, on_ready: Callable[[Broker], None] | None = None,
                wiring: Wiring | None = None, task_status=trio.TASK_STATUS_IGNORED) -> None:
    load_all()
    cluster = Cluster(config)
    t0 = time.monotonic()
    cluster.load()
    log.info("loaded %d topic(s) in %.3f s", len(cluster.topics), time.monotonic() - t0)
    broker = Broker(config=config, cluster=cluster)
    broker.security = {lis.name: build_security(config, lis.name) for lis in config.listeners}
    broker.scram.apply_config(config["scram.users"])
    broker.services = Services(broker, wiring)
    try:
        async with trio.open_nursery() as nursery:
            broker._nursery = nursery
            for i, node in enumerate(cluster.node_ids):
                # the first node takes the configured ports, the others the next ones up (or free ones)
                wanted = [(lis, lis.port + i if lis.port and i else lis.port) for lis in config.listeners]
                await nursery.start(_serve_node, broker, node, wanted)
                for bound in broker.node_listeners[node]:
                    adv = config.advertised_for(bound.name)
                    if adv.name == bound.name and adv in config.advertised_listeners:
                        if adv.port == 0 or i:
                            adv = Listener(adv.name, adv.host, adv.port + i if adv.port else bound.port)
                    else:
                        host = bound.host if bound.host not in ("0.0.0.0", "::", "") else "localhost"
                        adv = Listener(bound.name, host, bound.port)
                    broker.node_advertised.setdefault(node, {})[bound.name] = adv
            broker.listeners.extend(broker.node_listeners[cluster.node_id])
            broker.advertised.update(broker.node_advertised[cluster.node_id])
            await broker.services.start(nursery)
            nursery.start_soon(_housekeeping, broker)
            task_status.started(broker)
            if on_ready is not None:
                on_ready(broker)
    finally:
        broker.services.close()
        cluster.write_producer_snapshots()
        cluster.close()


async def _bind(host: str, port: int) -> tuple[list, int]:
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound_port = listeners[0].socket.getsockname()[1]
    if port == 0 and len(listeners) > 1:
        # a name with several addresses (localhost: 127.0.0.1 and ::1) got one free
        # port per address; rebind them all on the first one's port
        for l in listeners:
            await l.aclose()
        listeners = await trio.open_tcp_listeners(bound_port, host=host)
    return listeners, bound_port


async def _serve_node(broker: Broker, node: int, wanted: list[tuple[Listener, int]],
                      task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Binds one node's listeners and serves them until the node is taken down (its cancel
    scope: serve_listeners closes the sockets and every connection it started)."""
    bound_sockets: list[tuple[list, Listener]] = []
    try:
        for lis, port in wanted:
            sockets, bound_port = await _bind(lis.host, port)
            bound_sockets.append((sockets, Listener(lis.name, lis.host, bound_port)))
    except BaseException:
        for sockets, _ in bound_sockets:
            for sock in sockets:
                await sock.aclose()
        raise
    broker.node_listeners[node] = [bound for _, bound in bound_sockets]
    with trio.CancelScope() as scope:
        broker._node_scopes[node] = scope
        task_status.started()
        async with trio.open_nursery() as nursery:
            for sockets, bound in bound_sockets:
                nursery.start_soon(_accept_loop, broker, sockets, bound, node)


async def _accept_loop(broker: Broker, listeners, listener: Listener, node: int | None = None) -> None:
    async def handler(stream):
        await serve_connection(broker, stream, listener, node)

    await trio.serve_listeners(handler, listeners)


async def _housekeeping(broker: Broker) -> None:
    """Retention, compaction and the fsync=interval flush, off the request path. Retention is due
    by the broker's clock and a jump of it wakes this loop, so an advance past
    log.retention.check.interval.ms applies retention at once, at the advanced time."""
    config = broker.config
    flush_every = config["log.flush.interval.ms"] / 1000
    retention_every_ms = config["log.retention.check.interval.ms"]
    next_retention = now_ms() + retention_every_ms
    with JumpTimer(CLOCK) as timer:
        while True:
            await timer.sleep(flush_every)
            if config["fsync"] == "interval":
                parts = list(broker.cluster.all_partitions())
                if parts:
                    await trio.to_thread.run_sync(_flush_all, parts)
            if now_ms() >= next_retention:
                next_retention = now_ms() + retention_every_ms
                jobs = retention_jobs(broker)
                if jobs:
                    await trio.to_thread.run_sync(run_retention_jobs, jobs)


def _flush_all(parts) -> None:
    for p in parts:
        try:
            p.log.flush()
        except (OSError, ValueError):
            pass  # a partition deleted meanwhile


def retention_jobs(broker: Broker) -> list:
    """What retention and compaction must do, decided on the trio loop (the floors come from
    transaction state, which only the loop may read)."""
    jobs = []
    for part in broker.cluster.all_partitions():
        floor = part.first_unstable_offset()
        part.log.retention_floor = floor
        jobs.append((part, part.last_stable_offset))
    return jobs


def run_retention_jobs(jobs) -> None:
    """Runs in a worker thread: storage allows retention and compaction beside appends and reads."""
    now = now_ms()
    for part, last_stable_offset in jobs:
        try:
            part.log.apply_retention(now)
            if part.log.config.compact_enabled:
                part.log.compact(now, first_unstable_offset=last_stable_offset)
        except Exception:
            log.exception("retention failed on %s-%d", part.topic.name, part.index)
