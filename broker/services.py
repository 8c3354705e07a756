"""The broker's services, the coordinators, reached by attribute: `broker.services.groups`,
`broker.services.transactions`, `broker.services.share`. Each has `async run(task_status)` (its
timers; started in the server's nursery) and `close()` (called at shutdown); a coordinator with
state on disk reads it back with `load()` before anything else touches it.

A coordinator is built on first use: a broker that only answers ApiVersions, Metadata, Produce
and Fetch neither imports the coordinators' code nor creates their internal topics, so it starts
sooner. `Services` is the one owner of when each is built:
- at start, when its internal topic exists (`needed_at_start`): what it recovers from disk must
  be acted on even if no request comes (a transaction open or prepared before a restart is
  aborted on its timeout or completed; a member's session expires; a share lock times out);
- otherwise on the first access of its attribute. Building it loads its state (nothing to load
  then: its topic does not exist) and starts its `run` in the server's nursery, in the same step
  of the trio loop, so the request that asked for it sees a ready coordinator.
`existing(name)` reads a coordinator without building it, for callers that only look (metrics,
the console, a closed connection).

`Wiring` says how the services are built; its defaults are the product. A program that embeds
the broker (`broker.cli.main(wiring=...)`) may replace a part, e.g. the marker channel of the
transaction coordinator, through this same path rather than through flags or environment
variables read deep inside a service."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

import trio

from .cluster import Cluster
from .internal_topics import OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from .group_configs import GroupConfigs
    from .groups.coordinator import GroupCoordinator
    from .share.coordinator import ShareCoordinator
    from .transactions.coordinator import TransactionCoordinator
    from .transactions.producer_ids import ProducerIdManager
    from .transactions.markers import MarkerChannel

log = logging.getLogger("kafkalite.services")


class ServiceOwner(Protocol):
    """What the services need of the broker they serve (broker.state.Broker): its cluster. The
    coordinators get the whole broker; this module does not import the state that holds it."""

    @property
    def cluster(self) -> Cluster: ...


def _marker_channel(broker: ServiceOwner) -> "MarkerChannel":
    from .transactions.markers import MarkerChannel

    return MarkerChannel(broker)


@dataclass(frozen=True)
class Wiring:
    # builds the object that writes (and with fsync=always fsyncs) a transaction's markers
    marker_channel: Callable[[ServiceOwner], "MarkerChannel"] = _marker_channel


def _build_groups(broker: ServiceOwner, wiring: Wiring) -> "GroupCoordinator":
    from .groups.coordinator import GroupCoordinator

    groups = GroupCoordinator(broker)
    t0 = time.monotonic()
    groups.load()
    if groups.groups or groups.offsets.committed:
        log.info("loaded %d group(s) from %s in %.3f s", len(groups.groups), OFFSETS_TOPIC, time.monotonic() - t0)
    return groups


def _build_transactions(broker: ServiceOwner, wiring: Wiring) -> "TransactionCoordinator":
    from .transactions.coordinator import TransactionCoordinator

    # creates __transaction_state if it does not exist, and reads it back (in __init__)
    return TransactionCoordinator(broker, marker_channel=wiring.marker_channel(broker))


def _build_share(broker: ServiceOwner, wiring: Wiring) -> "ShareCoordinator":
    from .share.coordinator import ShareCoordinator

    share = ShareCoordinator(broker)
    share.load()
    return share


# name -> (builder, the internal topic whose presence means state to recover), in start order
_SERVICES: dict[str, tuple[Callable[[ServiceOwner, Wiring], Any], str]] = {
    "groups": (_build_groups, OFFSETS_TOPIC),
    "transactions": (_build_transactions, TRANSACTION_STATE_TOPIC),
    "share": (_build_share, SHARE_GROUP_STATE_TOPIC),
}


class Services:
    """The coordinators, each built once: at start when it has state on disk, else on first use."""

    def __init__(self, broker: ServiceOwner, wiring: Wiring | None = None):
        self._broker = broker
        self._wiring = wiring or Wiring()
        self._built: dict[str, Any] = {}
        # the server's nursery once start() ran; a coordinator built before that (or without a
        # server, in tests) starts its run with start()
        self._nursery: "trio.Nursery | None" = None
        self._closed = False
        self._producer_ids: "ProducerIdManager | None" = None
        self._group_configs: "GroupConfigs | None" = None
        # name -> the cancel scope of that coordinator's run (discard() ends it)
        self._scopes: dict[str, trio.CancelScope] = {}

    @property
    def groups(self) -> "GroupCoordinator":
        return self._get("groups")

    @property
    def transactions(self) -> "TransactionCoordinator":
        return self._get("transactions")

    @property
    def share(self) -> "ShareCoordinator":
        return self._get("share")

    @property
    def producer_ids(self) -> "ProducerIdManager":
        """The producer id blocks, shared by idempotent producers and the transaction coordinator:
        an idempotent producer's InitProducerId takes an id without building that coordinator
        (on Kafka it creates no __transaction_state either)."""
        if self._producer_ids is None:
            from .transactions.producer_ids import ProducerIdManager

            self._producer_ids = ProducerIdManager(self._broker.cluster.meta_dir / "producer_ids.json")
        return self._producer_ids

    @property
    def group_configs(self) -> "GroupConfigs":
        """The configs set per group id (GROUP resources of DescribeConfigs and
        IncrementalAlterConfigs), read by the group coordinator (a KIP-848 member's session and
        heartbeat interval) and the share coordinator: one copy for both, built without either."""
        if self._group_configs is None:
            from .group_configs import GroupConfigs

            cluster = self._broker.cluster
            self._group_configs = GroupConfigs(cluster.meta_dir, cluster.config.values)
        return self._group_configs

    def existing(self, name: str) -> Any | None:
        """The coordinator `name` if it was built, else None (never builds it)."""
        return self._built.get(name)

    def all(self) -> tuple[Any, ...]:
        """Every coordinator built so far, in start order."""
        return tuple(self._built[n] for n in _SERVICES if n in self._built)

    def needed_at_start(self, name: str) -> bool:
        """A coordinator whose internal topic exists has state to recover and act on."""
        return _SERVICES[name][1] in self._broker.cluster.topics

    async def start(self, nursery: "trio.Nursery") -> None:
        """Start the run of every coordinator built so far, then build and start those with state
        on disk, in start order. One built meanwhile on first use (completing a recovered
        transaction reaches the group coordinator) is started by _get."""
        eager = [name for name in _SERVICES if self.needed_at_start(name)]
        earlier = self.all()
        self._nursery = nursery
        for service in earlier:
            await nursery.start(self._run, self._name_of(service), service)
        for name in eager:
            if name not in self._built:
                service = self._built[name] = self._make(name)
                await nursery.start(self._run, name, service)

    async def _run(self, name: str, service: Any, task_status=trio.TASK_STATUS_IGNORED) -> None:
        with trio.CancelScope() as scope:
            self._scopes[name] = scope
            await service.run(task_status=task_status)

    def _name_of(self, service: Any) -> str:
        return next(name for name, built in self._built.items() if built is service)

    def discard(self) -> None:
        """Stop and forget every coordinator built so far (the reset and restore controls, which
        delete or replace their internal topics): each one's run is cancelled and it is closed;
        the next use builds a new one from what is on disk then. The producer id blocks stay, so
        ids handed out before are never handed out again."""
        for name, service in list(self._built.items()):
            scope = self._scopes.pop(name, None)
            if scope is not None:
                scope.cancel()
            service.close()
        self._built.clear()
        self._group_configs = None   # read again from disk (the reset control deletes its file)

    async def restart(self) -> None:
        """After discard() and new internal topics (restore): build and start the coordinators
        whose state is on disk, as at start."""
        if self._nursery is not None:
            await self.start(self._nursery)

    def close(self) -> None:
        """Close every built coordinator, in start order; nothing is built after this."""
        self._closed = True
        for service in self.all():
            service.close()

    def _get(self, name: str) -> Any:
        service = self._built.get(name)
        if service is None:
            if self._closed:
                raise RuntimeError(f"the {name} coordinator is not available: the broker is shutting down")
            service = self._built[name] = self._make(name)
            if self._nursery is not None:
                # its state is loaded already; run() only starts its timers
                self._nursery.start_soon(self._run, name, service)
        return service

    def _make(self, name: str) -> Any:
        builder, _topic = _SERVICES[name]
        log.debug("building the %s coordinator", name)
        return builder(self._broker, self._wiring)
