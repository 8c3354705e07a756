"""The trio server: listeners, one task per connection, dispatch.

Requests of one connection are handled one at a time and answered in order (Kafka mutes a
connection while it works on a request). A frame larger than socket.request.max.bytes, an
undecodable request or an API version we do not serve closes that connection with a log
line; the broker goes on serving every other connection. ApiVersions with a version we do
not know is answered in the v0 format with UNSUPPORTED_VERSION, as Kafka does.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import time
from types import SimpleNamespace
from dataclasses import dataclass, field
from typing import Callable

import trio

from kio.schema.errors import ErrorCode
from protocol.apis import API_TABLE
from protocol.messages import (
    MalformedRequest, encode_response, encode_response_chunks, parse_request, peek_header,
)
from protocol.regions import Chunk, FileRegion

from .clock import now_ms
from .cluster import Cluster
from .config import BrokerConfig, Listener
from .handlers import HANDLERS, load_all
from .handlers.common import CloseConnection
from .metrics import Metrics
from .services import Services, Wiring, build_services
from .fetch_sessions import FetchSessionCache

log = logging.getLogger("kafkalite.server")
_SIZE = struct.Struct(">i")


@dataclass
class Broker:
    """Everything a handler may reach: configuration, cluster, coordinators."""

    config: BrokerConfig
    cluster: Cluster
    # bound listeners (real ports once bound) and what each advertises
    listeners: list[Listener] = field(default_factory=list)
    advertised: dict[str, Listener] = field(default_factory=dict)
    # the coordinators, built once by serve() (broker.services)
    services: Services = field(init=False)
    started_ms: int = field(default_factory=now_ms)
    metrics: Metrics = field(default_factory=Metrics)
    # incremental fetch sessions (KIP-227); made from the config in __post_init__
    fetch_sessions: FetchSessionCache = field(init=False)

    def __post_init__(self) -> None:
        self.fetch_sessions = FetchSessionCache(self.config["max.incremental.fetch.session.cache.slots"],
                                                self.config["min.incremental.fetch.session.eviction.ms"])


class RequestContext:
    __slots__ = ("broker", "header", "listener", "peer", "regions")

    def __init__(self, broker: Broker, header, listener: Listener, peer: str):
        self.broker = broker
        self.header = header
        self.listener = listener
        self.peer = peer
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


async def serve_connection(broker: Broker, stream: trio.SocketStream, listener: Listener) -> None:
    try:
        peer = "%s:%s" % stream.socket.getpeername()[:2]
    except OSError:
        peer = "?"
    log.debug("connection opened from %s on %s", peer, listener.name)
    metrics = broker.metrics
    metrics.connections_opened += 1
    reader = FrameReader(stream.socket, broker.config["socket.request.max.bytes"])
    try:
        while True:
            frame = await reader.read_frame()
            t0 = time.monotonic()
            header, hsize = peek_header(frame)
            rng = API_TABLE.get(header.api_key)
            if rng is None or not rng.serves(header.api_version):
                if header.api_key == 18:
                    await stream.send_all(unsupported_api_versions(broker, header.correlation_id))
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
            ctx = RequestContext(broker, header, listener, peer)
            try:
                try:
                    response = await HANDLERS[header.api_key](ctx, request)
                    out: bytes | list[Chunk] | None = None
                    if response is not None:
                        encode = encode_response_chunks if ctx.regions else encode_response
                        out = encode(header.api_key, header.api_version, header.correlation_id, response)
                except CloseConnection as exc:
                    metrics.record(header.api_key, t0, len(frame) + 4, 0)
                    log.info("closing connection from %s (client %r): %s", peer, header.client_id, exc)
                    return
                except Exception:
                    metrics.record_error(header.api_key, t0, len(frame) + 4)
                    log.exception("error handling %s v%d from %s (client %r); closing the connection",
                                  rng.name, header.api_version, peer, header.client_id)
                    return
                if out is None:
                    metrics.record(header.api_key, t0, len(frame) + 4, 0)
                elif isinstance(out, list):
                    sent = await send_chunks(stream, out)
                    metrics.record(header.api_key, t0, len(frame) + 4, sent)
                else:
                    await stream.send_all(out)
                    metrics.record(header.api_key, t0, len(frame) + 4, len(out))
            finally:
                for region in ctx.regions:
                    region.release()
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
        metrics.connections_closed += 1
        log.debug("connection closed from %s on %s", peer, listener.name)
        with trio.move_on_after(0):
            await stream.aclose()


async def serve(config: BrokerConfig, *, on_ready: Callable[[Broker], None] | None = None,
                wiring: Wiring | None = None, task_status=trio.TASK_STATUS_IGNORED) -> None:
    load_all()
    cluster = Cluster(config)
    t0 = time.monotonic()
    cluster.load()
    log.info("loaded %d topic(s) in %.3f s", len(cluster.topics), time.monotonic() - t0)
    broker = Broker(config=config, cluster=cluster)
    broker.services = build_services(broker, wiring)
    try:
        async with trio.open_nursery() as nursery:
            for lis in config.listeners:
                listeners = await trio.open_tcp_listeners(lis.port, host=lis.host)
                bound_port = listeners[0].socket.getsockname()[1]
                if lis.port == 0 and len(listeners) > 1:
                    # a name with several addresses (localhost: 127.0.0.1 and ::1) got one free
                    # port per address; rebind them all on the first one's port
                    for l in listeners:
                        await l.aclose()
                    listeners = await trio.open_tcp_listeners(bound_port, host=lis.host)
                bound = Listener(lis.name, lis.host, bound_port)
                broker.listeners.append(bound)
                adv = config.advertised_for(lis.name)
                if adv.name == lis.name and adv in config.advertised_listeners:
                    if adv.port == 0:
                        adv = Listener(adv.name, adv.host, bound_port)
                else:
                    host = bound.host if bound.host not in ("0.0.0.0", "::", "") else "localhost"
                    adv = Listener(lis.name, host, bound_port)
                broker.advertised[lis.name] = adv
                nursery.start_soon(_accept_loop, broker, listeners, bound)
            for service in broker.services.all():
                await nursery.start(service.run)
            nursery.start_soon(_housekeeping, broker)
            task_status.started(broker)
            if on_ready is not None:
                on_ready(broker)
    finally:
        for service in broker.services.all():
            service.close()
        cluster.close()


async def _accept_loop(broker: Broker, listeners, listener: Listener) -> None:
    async def handler(stream):
        await serve_connection(broker, stream, listener)

    await trio.serve_listeners(handler, listeners)


async def _housekeeping(broker: Broker) -> None:
    """Retention, compaction and the fsync=interval flush, off the request path."""
    config = broker.config
    flush_every = config["log.flush.interval.ms"] / 1000
    retention_every = config["log.retention.check.interval.ms"] / 1000
    next_retention = trio.current_time() + retention_every
    while True:
        await trio.sleep(flush_every)
        if config["fsync"] == "interval":
            parts = list(broker.cluster.all_partitions())
            if parts:
                await trio.to_thread.run_sync(_flush_all, parts)
        if trio.current_time() >= next_retention:
            next_retention = trio.current_time() + retention_every
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
