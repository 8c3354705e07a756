"""Transactions through the Go clients (compat_tests/go, godriver): franz-go's transactional
client and GroupTransactSession, sarama's transactional SyncProducer with
AddMessageToTxnWithGroupMetadata. franz_txn.py and sarama_txn.py bind these to one client."""

from __future__ import annotations

from functools import partial

from compat_tests.clients.golang import run_driver

# The Kafka error code both clients surface when fenced (godriver reports its name): the fenced
# producer's next Produce carries the old epoch (INVALID_PRODUCER_EPOCH, which neither client
# translates as the Java client does).
FENCED_ERRORS = {"INVALID_PRODUCER_EPOCH"}


def run_plan(client: str, bootstrap: str, transactional_id: str, txns: list[dict]) -> None:
    run_driver(client, {"cmd": "plan", "bootstrap": bootstrap, "transactional_id": transactional_id, "txns": txns},
               60.0)


def fence(client: str, bootstrap: str, transactional_id: str, topic: str) -> str:
    return run_driver(client, {"cmd": "fence", "bootstrap": bootstrap, "transactional_id": transactional_id,
                               "topic": topic}, 60.0)


def time_out(client: str, bootstrap: str, transactional_id: str, topic: str, timeout_ms: int, until: str) -> str:
    return run_driver(client, {"cmd": "time_out", "bootstrap": bootstrap, "transactional_id": transactional_id,
                               "topic": topic, "timeout_ms": timeout_ms, "until": until}, 120.0)


def copy(client: str, bootstrap: str, transactional_id: str, group: str, source: str, sink: str, count: int,
         timeout_s: float = 60.0) -> int:
    return run_driver(client, {"cmd": "copy", "bootstrap": bootstrap, "transactional_id": transactional_id,
                               "group": group, "source": source, "sink": sink, "count": count}, timeout_s)


def bound(client: str) -> tuple[partial, partial, partial, partial]:
    """run_plan, fence, time_out and copy for one Go client ("franz", "sarama")."""
    return partial(run_plan, client), partial(fence, client), partial(time_out, client), partial(copy, client)
