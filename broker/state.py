"""The broker's state: everything a handler may reach, apart from how requests arrive.

Rules:
- `Broker` holds state only: the configuration, the cluster (topics, partitions, nodes), the
  coordinators (`services`), listener security, SCRAM credentials, the authorizer, metrics,
  fetch sessions, the imitated Kafka release and its API ranges, the addresses clients are
  told, the cluster administration state (client quotas, dynamic broker configs, features,
  reassignments, delegation tokens, client telemetry), and the dispatch hooks test controls register (broker.hooks). It neither reads nor
  writes sockets: the network layer (broker.server, broker.connection) binds the listeners,
  fills in `listeners`/`advertised`/`node_advertised` once bound, and lends a `NodePorts` for
  taking a node's ports down and up.
- `open_broker(config)` is the one way to build it: the server's start and the in-process
  handler tests (broker/tests/handlers) both build the same state from a config and a data dir.
- A request sees the broker through a `RequestContext` (broker.context); the controls and the
  HTTP endpoints get the `Broker` itself.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

from kafkalite.protocol.apis import API_TABLE, ApiRange

from .authorizer import Authorizer
from .authorizer import from_config as authorizer_from_config
from .clock import now_ms
from .cluster import Cluster
from .settings.broker_config import BrokerConfig
from .settings.listeners import Listener
from .credentials import ScramStore
from .delegation_tokens import DelegationTokens
from .dynamic_configs import DynamicBrokerConfigs
from .features import Features
from .fetch_sessions import FetchSessionCache
from .framing import RequestMemoryPool
from .hooks import DispatchHooks
from .http_endpoint import HttpAccess
from .kafka_versions import KafkaRelease
from .kafka_versions import release as kafka_release
from .metrics import Metrics
from .quotas import ClientQuotas
from .reassignments import Reassignments
from .request_log import RequestLog
from .security import ListenerSecurity
from .security import build as build_security
from .services import Services, Wiring
from .telemetry import TELEMETRY_APIS, ClientTelemetry

log = logging.getLogger("kafkalite.state")


class NodePorts(Protocol):
    """What the network layer lends the state for taking one node's ports down and up."""

    async def node_down(self, node: int) -> None: ...

    async def node_up(self, node: int) -> None: ...


@dataclass(eq=False)
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
    # who may talk to the HTTP endpoints (broker.http_endpoint); set by broker.supervisor
    http_access: HttpAccess = field(default_factory=HttpAccess)
    # what test controls intercept before dispatch (broker.hooks); empty unless a test arms one
    hooks: DispatchHooks = field(default_factory=DispatchHooks)
    # what the broker received and answered (broker.request_log): the newest request.log.size
    # requests; None when that is 0 (the record-requests control turns it on and off)
    request_log: RequestLog | None = None
    # the Kafka release imitated (--kafka-version) and the version ranges advertised and served:
    # the API table, or its intersection with that release's
    release: KafkaRelease | None = field(init=False)
    api_ranges: dict[int, ApiRange] = field(init=False)
    # node id -> listener name -> the address clients are told for that node (node_id's is `advertised`)
    node_advertised: dict[int, dict[str, Listener]] = field(default_factory=dict)
    # node id -> its bound listeners (the real ports), bound again by node_up
    node_listeners: dict[int, list[Listener]] = field(default_factory=dict)
    # listener name -> its security (protocol, TLS context, SASL mechanisms)
    security: dict[str, ListenerSecurity] = field(default_factory=dict)
    # SCRAM credentials (data dir), read by SCRAM authentication and the credential APIs
    scram: ScramStore = field(init=False)
    # the network layer's hold on the nodes' ports (broker.server); None without a server
    ports: NodePorts | None = None
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
    # queued.max.request.bytes: the request bytes all connections may hold at once (broker.framing)
    request_memory: RequestMemoryPool = field(init=False)

    def __post_init__(self) -> None:
        self.authorizer = authorizer_from_config(self.config, self.cluster.data_dir)
        self.fetch_sessions = FetchSessionCache(self.config["max.incremental.fetch.session.cache.slots"],
                                                self.config["min.incremental.fetch.session.eviction.ms"])
        self.scram = ScramStore(self.config.data_dir)
        self.request_memory = RequestMemoryPool(self.config["queued.max.request.bytes"])
        version = self.config.kafka_version
        self.release = None if version is None else kafka_release(version)
        self.api_ranges = API_TABLE if self.release is None else self.release.api_ranges()
        self.open_cluster_admin()
        self.unadvertised = frozenset() if self.config["client.telemetry.enable"] else TELEMETRY_APIS
        size = self.config["request.log.size"]
        self.request_log = RequestLog(size) if size else None

    def open_cluster_admin(self) -> None:
        """The cluster administration state (quotas, dynamic broker configs, features,
        reassignments, delegation tokens, client telemetry) read from the metadata directory; the
        reset control opens it again once it has removed those files."""
        meta_dir, node_id = self.cluster.meta_dir, self.cluster.node_id
        self.quotas = ClientQuotas(meta_dir)
        self.dynamic_configs = DynamicBrokerConfigs(meta_dir, self.config, node_id, self.cluster.apply_broker_defaults)
        self.features = Features(meta_dir, self.config, self.release, node_id)
        replaced = getattr(self, "reassignments", None)
        self.reassignments = Reassignments(self.cluster, self.config["reassignment.catch.up.ms"])
        if replaced is not None:
            # the task that completes reassignments sleeps on the old one's wake-up
            self.reassignments.wake = replaced.wake
        self.delegation_tokens = DelegationTokens(meta_dir, self.config["delegation.token.secret.key"],
                                                  self.config["delegation.token.max.lifetime.ms"],
                                                  self.config["delegation.token.expiry.time.ms"])
        self.scram.tokens = self.delegation_tokens
        self.telemetry = ClientTelemetry(meta_dir)

    def address_of(self, node: int, listener_name: str) -> Listener:
        """Where a client on `listener_name` reaches `node`."""
        return self.node_advertised[node][listener_name]

    async def node_down(self, node: int) -> None:
        """Close the node's listening sockets and every connection it holds."""
        if self.ports is not None:
            await self.ports.node_down(node)

    async def node_up(self, node: int) -> None:
        """Bind the node's ports again; returns once they accept connections."""
        if self.ports is not None:
            await self.ports.node_up(node)


def open_broker(config: BrokerConfig, wiring: Wiring | None = None) -> Broker:
    """The broker's state read from `config.data_dir`: topics loaded, listener security and SCRAM
    credentials from the config, the services ready to be built. Close it with `close_broker`."""
    cluster = Cluster(config)
    t0 = time.monotonic()
    cluster.load()
    log.info("loaded %d topic(s) in %.3f s", len(cluster.topics), time.monotonic() - t0)
    broker = Broker(config=config, cluster=cluster)
    broker.security = {lis.name: build_security(config, lis.name) for lis in config.listeners}
    broker.scram.apply_config(config["scram.users"])
    broker.services = Services(broker, wiring)
    return broker


def close_broker(broker: Broker) -> None:
    """Close the coordinators, keep the producer state for the next start, close the logs."""
    broker.services.close()
    broker.cluster.write_producer_snapshots()
    broker.cluster.close()
