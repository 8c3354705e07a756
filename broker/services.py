"""The broker's services, built once at startup and reached by attribute: `broker.services.groups`,
`broker.services.transactions`. Each has `async run(task_status)` (started with the server, in
this order) and `close()` (called at shutdown).

`Wiring` says how the services are built; its defaults are the product. A program that embeds
the broker (`broker.cli.main(wiring=...)`) may replace a part, e.g. the marker channel of the
transaction coordinator, through this same path rather than through flags or environment
variables read deep inside a service."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .groups import GroupCoordinator
from .share import ShareCoordinator
from .transactions.coordinator import TransactionCoordinator
from .transactions.markers import MarkerChannel

if TYPE_CHECKING:
    from .server import Broker


@dataclass(frozen=True)
class Wiring:
    # builds the object that writes (and with fsync=always fsyncs) a transaction's markers
    marker_channel: Callable[["Broker"], MarkerChannel] = MarkerChannel


@dataclass(frozen=True)
class Services:
    groups: GroupCoordinator
    transactions: TransactionCoordinator
    share: ShareCoordinator

    def all(self) -> tuple[Any, ...]:
        """Every service, in start order."""
        return (self.groups, self.transactions, self.share)


def build_services(broker: "Broker", wiring: Wiring | None = None) -> Services:
    wiring = wiring or Wiring()
    groups = GroupCoordinator(broker)
    transactions = TransactionCoordinator(broker, marker_channel=wiring.marker_channel(broker))
    return Services(groups=groups, transactions=transactions, share=ShareCoordinator(broker))
