"""The server: the broker's state opened, its listeners bound, one task per connection.

Rules:
- `serve(config)` opens the state (broker.state.open_broker), binds every listener of every
  node, starts the services and housekeeping in its nursery, reports the Broker through
  task_status, and closes the state when it is cancelled.
- With `nodes` > 1 every node id gets its own port on every listener (the first node the
  configured port, the others the next ports up, or free ones when 0 was asked for); a request
  is handled as the node whose port it came in on (`RequestContext.node_id`).
- A node taken down (`Broker.node_down`, through `NodeListeners`) closes its listening sockets
  and its open connections; `node_up` binds the same ports again.
- Partitions loaded but not opened yet (broker.cluster's rules: a one-node cluster's start
  answers first) are opened after the start, OPEN_STEP at a time between other tasks' turns;
  one that cannot be opened is named in one log line and left to fail the requests that use it.
- Each accepted connection is served by broker.connection (framing, TLS, the SASL gate,
  dispatch); this module never reads a request.
- Out of descriptors (EMFILE and the like), accepting pauses with one log line per shortage and
  resumes by itself; connections already accepted go on being served.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from typing import Any, Callable

import trio

from kafkalite.storage.open_files import OUT_OF_DESCRIPTORS, descriptors_exhausted

from .settings.broker_config import BrokerConfig
from .settings.listeners import Listener
from .connection import serve_connection
from .handlers import load_all
from .housekeeping import housekeeping
from .reassignments import complete_caught_up
from .services import Wiring
from .state import Broker, close_broker, open_broker

log = logging.getLogger("kafkalite.server")

# partitions opened by the background pass between two yields to other tasks (about 50 ms)
OPEN_STEP = 100
# accept(2) errors of a process or system out of descriptors or memory: retried after a pause
ACCEPT_CAPACITY_ERRNOS = frozenset((*OUT_OF_DESCRIPTORS, errno.ENOMEM, errno.ENOBUFS))
ACCEPT_RETRY_SECONDS = 0.1


class NodeListeners:
    """The nodes' listening sockets, each node's under a cancel scope of its own (the state's
    `NodePorts`): cancelling it closes the node's sockets and every connection it accepted."""

    def __init__(self, broker: Broker, nursery: trio.Nursery):
        self._broker = broker
        self._nursery = nursery
        self._scopes: dict[int, trio.CancelScope] = {}

    async def serve_node(self, node: int, wanted: list[tuple[Listener, int]]) -> None:
        """Bind `node`'s listeners on the `wanted` ports and serve them; returns once they accept."""
        await self._nursery.start(self._serve_node, node, wanted)

    async def node_down(self, node: int) -> None:
        scope = self._scopes.pop(node, None)
        if scope is not None:
            scope.cancel()
            await trio.lowlevel.checkpoint()

    async def node_up(self, node: int) -> None:
        if node in self._scopes:
            return
        await self.serve_node(node, [(lis, lis.port) for lis in self._broker.node_listeners[node]])

    async def _serve_node(self, node: int, wanted: list[tuple[Listener, int]],
                          task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Binds one node's listeners and serves them until the node is taken down (its cancel
        scope: serve_listeners closes the sockets and every connection it started)."""
        broker = self._broker
        bound_sockets: list[tuple[list[trio.SocketListener], Listener]] = []
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
            self._scopes[node] = scope
            task_status.started()
            async with trio.open_nursery() as nursery:
                for sockets, bound in bound_sockets:
                    nursery.start_soon(_accept_loop, broker, sockets, bound, node)


async def serve(config: BrokerConfig, *, on_ready: Callable[[Broker], None] | None = None,
                wiring: Wiring | None = None, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    load_all()
    broker = open_broker(config, wiring)
    cluster = broker.cluster
    try:
        async with trio.open_nursery() as nursery:
            ports = broker.ports = NodeListeners(broker, nursery)
            for i, node in enumerate(cluster.node_ids):
                # the first node takes the configured ports, the others the next ones up (or free ones)
                wanted = [(lis, lis.port + i if lis.port and i else lis.port) for lis in config.listeners]
                await ports.serve_node(node, wanted)
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
            nursery.start_soon(housekeeping, broker)
            nursery.start_soon(complete_caught_up, broker)
            task_status.started(broker)
            if on_ready is not None:
                on_ready(broker)
            nursery.start_soon(_open_loaded_partitions, broker)
    finally:
        broker.ports = None
        close_broker(broker)


async def _open_loaded_partitions(broker: Broker) -> None:
    """The background pass (see the rules): every partition the start left to open, opened."""
    pending = broker.cluster.not_yet_open()
    if not pending:
        return
    t0 = time.monotonic()
    for i, part in enumerate(pending):
        if i and i % OPEN_STEP == 0:
            await trio.sleep(0)
        try:
            part.open_now()
        except OSError as exc:
            log.error("cannot open partition %s-%d: %s", part.topic.name, part.index, exc)
    log.info("opened %d partition(s) after the start in %.3f s", len(pending), time.monotonic() - t0)


async def _bind(host: str, port: int) -> tuple[list[trio.SocketListener], int]:
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound_port = listeners[0].socket.getsockname()[1]
    if port == 0 and len(listeners) > 1:
        # a name with several addresses (localhost: 127.0.0.1 and ::1) got one free
        # port per address; rebind them all on the first one's port
        for listener in listeners:
            await listener.aclose()
        listeners = await trio.open_tcp_listeners(bound_port, host=host)
    return listeners, bound_port


async def _accept_loop(broker: Broker, listeners: list[trio.SocketListener], listener: Listener,
                       node: int | None = None) -> None:
    async with trio.open_nursery() as nursery:
        for sock in listeners:
            nursery.start_soon(_accept_from, broker, sock, listener, node, nursery)


async def _accept_from(broker: Broker, sock: trio.SocketListener, listener: Listener, node: int | None,
                       nursery: trio.Nursery) -> None:
    """Accept connections on one socket, each served in `nursery`, until cancelled (the socket is
    then closed). Out of descriptors, accepting pauses ACCEPT_RETRY_SECONDS at a time with one
    line naming the limit and its settings (storage.open_files.descriptors_exhausted) and one when
    it accepts again, not a traceback every pause as trio.serve_listeners logs; the connection
    waits in the listen queue, and the broker goes on serving the connections it has."""
    short_since: float | None = None
    async with sock:
        while True:
            try:
                stream = await sock.accept()
            except OSError as exc:
                if exc.errno not in ACCEPT_CAPACITY_ERRNOS:
                    raise
                if short_since is None:
                    short_since = trio.current_time()
                    descriptors_exhausted(f"accepting connections on {listener.name} "
                                          f"({os.strerror(exc.errno or 0)}); new connections wait in the listen queue")
                await trio.sleep(ACCEPT_RETRY_SECONDS)
                continue
            if short_since is not None:
                log.warning("accepting connections on %s again after %.1f s", listener.name,
                            trio.current_time() - short_since)
                short_since = None
            nursery.start_soon(serve_connection, broker, stream, listener, node)
