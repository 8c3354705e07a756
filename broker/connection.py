"""The connection loop: one task per client connection, requests handled one at a time.

Rules:
- Requests of one connection are handled one at a time and answered in order (Kafka mutes a
  connection while it works on a request). The answer to a Produce request whose successor
  Produce is already received waits for it, and such answers leave in one send (at most
  COALESCE_MAX); not on SASL listeners, nor while a dispatch hook is registered.
- Frames (broker.framing): a frame larger than socket.request.max.bytes, or before a SASL
  listener's connection is authenticated larger than sasl.server.max.receive.size, closes the
  connection with a log line, as does an undecodable request or an API version we do not serve;
  the broker goes on serving every other connection. ApiVersions with a version we do not know
  is answered in the v0 format with UNSUPPORTED_VERSION, as Kafka does. The frame a request came
  in goes back to queued.max.request.bytes once the request is decoded (or the connection ends).
- Server errors: an exception in a handler (or in encoding its answer) is logged once with its
  traceback and answered with UNKNOWN_SERVER_ERROR in that API's own response shape, every
  topic, partition, resource or member of the request carrying it (Kafka's
  AbstractRequest.getErrorResponse, protocol.error_responses); the connection stays open. It
  closes only where Kafka's RequestHandlerHelper.sendErrorOrCloseConnection closes: an acks=0
  Produce, which has no response to carry the error; and, on a SASL listener, a request failing
  before authentication, which Kafka's SaslServerAuthenticator handles and fails the channel for.
- TLS listeners wrap the accepted socket in a trio.SSLStream (a handshake not finished within
  ssl.handshake.timeout.ms closes the connection; it holds up no other connection).
- The SASL gate: on SASL listeners a connection may send only ApiVersions (once) and
  SaslHandshake, then SaslAuthenticate (or, after a v0 handshake, bare SASL tokens), until it is
  authenticated (broker.sasl); anything else closes it with a log line, as Kafka does (once
  SaslAuthenticate is due, after answering ILLEGAL_SASL_STATE). A request after the SASL session
  expired (KIP-368) closes the connection unless it is the SaslHandshake that starts
  re-authentication. Every request's context carries the connection's principal.
- What a request gets is decided by broker.dispatch (handler or dispatch hook); this loop only
  carries out an interception's effect on the connection: a dropped response (the connection
  then reads and discards everything) or a held one.
- Client quotas (broker.throttling) are applied here, once per request after encoding and only
  while some quota or forced throttle is set (`quotas.enforcing`): a throttled answer carries its
  throttle time and goes out at once, then the connection is muted (nothing read) that long.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import time
from typing import Any

import trio

from kio.schema.errors import ErrorCode
from kafkalite.protocol.messages import (
    MalformedRequest, RequestHeader, encode_response, encode_response_chunks, parse_request, peek_header,
)
from kafkalite.protocol.regions import Chunk

from .settings.listeners import Listener
from .context import Connection, RequestContext
from .dispatch import dispatch
from .framing import ConnectionClosed, FrameReader, StreamSource, send_chunks
from .handlers.common import CloseConnection
from .sasl import API_SASL_HANDSHAKE, API_VERSIONS, SaslFailed, SaslSession
from .security import ANONYMOUS, ListenerSecurity, certificate_subject, principal_from_dn
from .state import Broker
from . import throttling

log = logging.getLogger("kafkalite.server")
_SIZE = struct.Struct(">i")
API_PRODUCE = 0
# answers to pipelined Produce requests held back to go out in one send (see serve_connection)
COALESCE_MAX = 8


def unsupported_api_versions(broker: Broker, correlation_id: int) -> bytes:
    """The v0 ApiVersions answer with UNSUPPORTED_VERSION to an ApiVersions version we do not know."""
    from .handlers.api_versions import build

    body = build(0, broker, ErrorCode.unsupported_version)
    return encode_response(18, 0, correlation_id, body)


def _enum_name(api_name: str) -> str:
    """Kafka's ApiKeys constant for an API (ListGroups -> LIST_GROUPS), as its messages print it."""
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(api_name)).upper()


async def _answer_illegal_sasl_state(broker: Broker, out_stream: trio.abc.SendStream, frame: bytes | memoryview,
                                     header: RequestHeader, hsize: int) -> None:
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
    """Serve one accepted connection until it closes (the rules at the top of this module);
    `node_id` is the node whose port accepted it."""
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
        reader = FrameReader(StreamSource(out_stream), broker.config["socket.request.max.bytes"],
                             broker.request_memory)
    else:
        reader = FrameReader(stream.socket, broker.config["socket.request.max.bytes"], broker.request_memory)
    sasl = SaslSession(security, broker.scram) if security.sasl else None
    _limit_frames(broker, reader, sasl)
    conn = Connection(security, principal, sasl)
    # Produce answers not sent yet: while the next Produce request of a pipelining client
    # (max.in.flight > 1) is already received, its predecessor's answer waits for it, and the
    # answers leave together in one send, in order (a send, and the wake-up it costs the client,
    # is the largest cost of a produce request after the log write). Only Produce after Produce
    # is held: that handler never waits for other clients (a Fetch may wait max_wait_ms), so an
    # answer is held back at most for the handling of COALESCE_MAX - 1 received requests.
    # Not on SASL listeners (their sends follow the authentication state), nor while a dispatch
    # hook (a test fault) is registered.
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
                _limit_frames(broker, reader, sasl)
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
            # decoded (kio copies what it reads): the frame's share of queued.max.request.bytes
            # goes back now, as Kafka releases a request's buffer once it is parsed, so that a
            # request waiting on others (a JoinGroup, a Fetch's max_wait) holds none of it
            reader.release()
            if sasl is not None and header.api_key == API_VERSIONS and not sasl.authenticated:
                sasl.state = "HANDSHAKE_REQUEST"  # one ApiVersions before the handshake, as Kafka
            ctx = RequestContext(broker, header, listener, peer, node_id, conn)
            throttle_ms = 0
            try:
                try:
                    response, interception = await dispatch(ctx, request)
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
                    answer = None if sasl is not None and not sasl.authenticated else _server_error_answer(
                        header, request)
                    if answer is None:
                        metrics.record_error(header.api_key, t0, len(frame) + 4)
                        log.exception("error handling %s v%d from %s (client %r); closing the connection",
                                      rng.name, header.api_version, peer, header.client_id)
                        return
                    log.exception("error handling %s v%d from %s (client %r); answered UNKNOWN_SERVER_ERROR",
                                  rng.name, header.api_version, peer, header.client_id)
                    if pending:
                        await _send_pending(out_stream, pending)
                    await out_stream.send_all(answer)
                    metrics.record_error(header.api_key, t0, len(frame) + 4, len(answer))
                    continue
                if interception is not None:
                    if pending:
                        await _send_pending(out_stream, pending)
                    if interception.drop:
                        metrics.record(header.api_key, t0, len(frame) + 4, 0)
                        log.info("dropped the response to %s v%d from %s (client %r); the connection now "
                                 "ignores what it receives", rng.name, header.api_version, peer, header.client_id)
                        while True:
                            await reader.read_frame()
                    if interception.delay_ms and not await _hold(stream, interception.delay_ms / 1000):
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
                elif pending or (coalesce and header.api_key == API_PRODUCE and not broker.hooks):
                    pending.append(out)
                    metrics.record(header.api_key, t0, len(frame) + 4, len(out))
                else:
                    await out_stream.send_all(out)
                    metrics.record(header.api_key, t0, len(frame) + 4, len(out))
                # held answers go out before the connection is muted for a throttle (an acks=0
                # Produce's throttle included), when enough are held, or before a non-Produce
                if pending and (throttle_ms or len(pending) >= COALESCE_MAX
                                or reader.buffered_api_key() != API_PRODUCE):
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
            if sasl is not None:
                if sasl.authenticated:
                    conn.principal = sasl.principal or ANONYMOUS
                _limit_frames(broker, reader, sasl)
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
        reader.release()
        metrics.connections_closed += 1
        log.debug("connection closed from %s on %s", peer, listener.name)
        # share sessions die with their connection, as in Kafka's share session cache
        share = broker.services.existing("share")
        if share is not None:
            share.connection_closed(peer)
        with trio.move_on_after(0):
            await out_stream.aclose()


def _limit_frames(broker: Broker, reader: FrameReader, sasl: SaslSession | None) -> None:
    """The largest frame the connection reads next: sasl.server.max.receive.size until a SASL
    listener's connection is authenticated (and while it re-authenticates), as Kafka's
    SaslServerAuthenticator; socket.request.max.bytes otherwise."""
    if sasl is not None and not sasl.authenticated:
        reader.set_limit(broker.config["sasl.server.max.receive.size"], "sasl.server.max.receive.size")
    else:
        reader.set_limit(broker.config["socket.request.max.bytes"], "socket.request.max.bytes")


def _server_error_answer(header: RequestHeader, request: Any) -> bytes | None:
    """The encoded UNKNOWN_SERVER_ERROR answer to a request whose handler failed, in the API's
    own response shape (Kafka's getErrorResponse); None for an acks=0 Produce, which Kafka
    answers by closing the connection. No message: Kafka's ApiError.fromThrowable leaves it out
    for UNKNOWN_SERVER_ERROR so as not to leak the exception."""
    if header.api_key == API_PRODUCE and request.acks == 0:
        return None
    from kafkalite.protocol.error_responses import error_response

    body = error_response(header.api_key, header.api_version, request, ErrorCode.unknown_server_error)
    return encode_response(header.api_key, header.api_version, header.correlation_id, body)


async def _send_pending(stream: trio.abc.SendStream, pending: list[bytes]) -> None:
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
