"""A connection's and a request's view of the broker: what every handler receives as `ctx`.

Rules:
- `RequestContext` is built by the connection loop (broker.connection) for each request, and by
  the in-process handler tests; handlers read the broker's state only through it
  (`ctx.broker`, `ctx.cluster`), and the connection's only through `ctx.conn` / `ctx.principal`.
- `Connection` is one client connection's security state: the listener's security, the
  principal (Kafka's `User:NAME` string) and the SASL session. A handler that must end the
  connection after its answer (a failed authentication) sets `close_after_response`.
- `regions` are the file regions a response carries (Fetch); the connection loop sends them
  from the files and releases them after sending, whatever happens.
- `controller_mutation` is the controller mutation quota a CreateTopics, CreatePartitions or
  DeleteTopics handler recorded against; broker.throttling reads its throttle time.
"""

from __future__ import annotations

from kafkalite.protocol.messages import RequestHeader
from kafkalite.protocol.regions import FileRegion

from .cluster import Cluster
from .quotas import ControllerMutationQuota
from .settings.listeners import Listener
from .sasl import SaslSession
from .security import ANONYMOUS, ListenerSecurity
from .state import Broker


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
    """One request: its header, where it came from, and the broker it is handled by."""

    __slots__ = ("broker", "header", "listener", "peer", "node_id", "conn", "principal", "regions",
                 "controller_mutation")

    def __init__(self, broker: Broker, header: RequestHeader, listener: Listener, peer: str,
                 node_id: int | None = None, conn: Connection | None = None):
        self.broker = broker
        self.header = header
        self.listener = listener
        self.peer = peer
        # the node whose port the request came in on
        self.node_id: int = broker.cluster.node_id if node_id is None else node_id
        self.conn = conn
        # Kafka's principal of the request (User:alice, User:ANONYMOUS, User:CN=...)
        self.principal: str = conn.principal if conn is not None else ANONYMOUS
        # file regions the response carries (Fetch): sent from the file, released after sending
        self.regions: list[FileRegion] = []
        # the quota the request's partition creations and deletions were recorded against
        self.controller_mutation: ControllerMutationQuota | None = None

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @property
    def cluster(self) -> Cluster:
        return self.broker.cluster
