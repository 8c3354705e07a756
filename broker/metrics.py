"""Broker metrics and the optional Prometheus endpoint (`--metrics-port`, served as an ASGI app
by broker.http_endpoint, like the console and the controls).

The request path pays one `record()` per request: a few list-slot increments and one
monotonic clock read (the start time is read by the caller). Everything else (topics,
partitions, open transactions, open connections) is computed when /metrics is scraped.

Exposed (text format 0.0.4):

    kafkalite_requests_total{api="produce",api_key="0"}          counter
    kafkalite_request_errors_total{api=...,api_key=...}         counter: requests that failed in the broker
    kafkalite_request_duration_seconds_sum / _count {api=...}   summary: time from frame read to response sent
    kafkalite_received_bytes_total, kafkalite_sent_bytes_total  counters: request/response frames
    kafkalite_connections_opened_total, kafkalite_connections   counter, gauge
    kafkalite_topics, kafkalite_partitions                      gauges
    kafkalite_open_transactions                                 gauge
    kafkalite_uptime_seconds                                    gauge
    kafkalite_tasks                                             gauge: tasks alive in the event loop

Open transactions come from the transaction coordinator's `open_transaction_count()`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import trio

from .http_endpoint import AsgiApp, Guard, lifespan, send_text, serve_app

log = logging.getLogger("kafkalite.metrics")

_N = 128  # api keys are < 128 in Kafka 4.x
_monotonic = time.monotonic


class Metrics:
    __slots__ = ("requests", "seconds", "errors", "bytes_in", "bytes_out", "connections_opened",
                 "connections_closed", "started")

    def __init__(self) -> None:
        self.requests = [0] * _N
        self.seconds = [0.0] * _N
        self.errors = [0] * _N
        self.bytes_in = 0
        self.bytes_out = 0
        self.connections_opened = 0
        self.connections_closed = 0
        self.started = _monotonic()

    def record(self, api_key: int, started: float, nbytes_in: int, nbytes_out: int) -> None:
        """One request answered (or not, for acks=0): `started` is the monotonic time the frame was read."""
        self.requests[api_key] += 1
        self.seconds[api_key] += _monotonic() - started
        self.bytes_in += nbytes_in
        self.bytes_out += nbytes_out

    def record_error(self, api_key: int, started: float, nbytes_in: int, nbytes_out: int = 0) -> None:
        """A request that ended in a broker-side failure: answered with UNKNOWN_SERVER_ERROR
        (`nbytes_out` sent), or its connection closed."""
        self.errors[api_key] += 1
        self.record(api_key, started, nbytes_in, nbytes_out)


def open_transactions(broker: Any) -> int:
    try:
        # a transaction coordinator nobody used yet has none (and a scrape does not build it)
        txns = broker.services.existing("transactions")
        return 0 if txns is None else txns.open_transaction_count()
    except Exception:  # a scrape must never fail because of one gauge
        log.exception("open_transaction_count failed")
        return 0


def _api_name(api_key: int) -> str:
    try:
        from kio.index import api_key_map

        return api_key_map[api_key]
    except Exception:
        return str(api_key)


def _tasks_living() -> int | None:
    """Tasks alive in the trio loop this runs in; None outside one (render() called by a test)."""
    try:
        return trio.lowlevel.current_statistics().tasks_living
    except RuntimeError:
        return None


def render(broker: Any) -> str:
    """The Prometheus text exposition of `broker.metrics` plus gauges read from the broker."""
    m: Metrics = broker.metrics
    out: list[str] = []

    def head(name: str, kind: str, what: str) -> None:
        out.append(f"# HELP {name} {what}")
        out.append(f"# TYPE {name} {kind}")

    keys = [k for k in range(_N) if m.requests[k]]
    labels = {k: f'api="{_api_name(k)}",api_key="{k}"' for k in keys}
    head("kafkalite_requests_total", "counter", "Requests handled, per API.")
    out += [f"kafkalite_requests_total{{{labels[k]}}} {m.requests[k]}" for k in keys]
    head("kafkalite_request_errors_total", "counter", "Requests that failed inside the broker (answered UNKNOWN_SERVER_ERROR or connection closed), per API.")
    out += [f"kafkalite_request_errors_total{{{labels[k]}}} {m.errors[k]}" for k in keys]
    head("kafkalite_request_duration_seconds", "summary", "Time from reading a request to sending its response, per API.")
    for k in keys:
        out.append(f"kafkalite_request_duration_seconds_sum{{{labels[k]}}} {m.seconds[k]:.9f}")
        out.append(f"kafkalite_request_duration_seconds_count{{{labels[k]}}} {m.requests[k]}")
    cluster = getattr(broker, "cluster", None)
    topics = getattr(cluster, "topics", {}) or {}
    gauges: list[tuple[str, str, str, object]] = [
        ("kafkalite_received_bytes_total", "counter", "Bytes of request frames received.", m.bytes_in),
        ("kafkalite_sent_bytes_total", "counter", "Bytes of response frames sent.", m.bytes_out),
        ("kafkalite_connections_opened_total", "counter", "Client connections accepted.", m.connections_opened),
        ("kafkalite_connections", "gauge", "Client connections open now.",
         m.connections_opened - m.connections_closed),
        ("kafkalite_topics", "gauge", "Topics, internal ones included.", len(topics)),
        ("kafkalite_partitions", "gauge", "Partitions of all topics.",
         sum(len(t.partitions) for t in topics.values())),
        ("kafkalite_open_transactions", "gauge", "Transactions begun and not yet completed.",
         open_transactions(broker)),
        ("kafkalite_uptime_seconds", "gauge", "Seconds since the broker started.", f"{_monotonic() - m.started:.3f}"),
    ]
    tasks = _tasks_living()
    if tasks is not None:  # a task left behind per connection, fetch or group shows here first (bench.soak)
        gauges.append(("kafkalite_tasks", "gauge",
                       "Tasks alive in the broker's event loop (connections, waiting fetches, housekeeping).", tasks))
    for name, kind, what, value in gauges:
        head(name, kind, what)
        out.append(f"{name} {value}")
    return "\n".join(out) + "\n"


def make_app(broker: Any) -> AsgiApp:
    """The metrics endpoint as an ASGI app: GET (or HEAD) /metrics, a pointer at /."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        method, path = scope["method"], scope["path"]
        head = method == "HEAD"
        if method not in ("GET", "HEAD"):
            await send_text(send, 405, "only GET\n")
        elif path in ("/metrics", "/metrics/"):
            await send_text(send, 200, render(broker), "text/plain; version=0.0.4; charset=utf-8", head=head)
        elif path == "/":
            await send_text(send, 200, "kafkalite: metrics at /metrics\n", head=head)
        else:
            await send_text(send, 404, "not found; metrics are at /metrics\n", head=head)

    return app


async def serve_metrics(broker: Any, host: str, port: int, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve GET /metrics until cancelled; reports (host, bound port) through task_status."""
    host = host or "0.0.0.0"
    await serve_app(lambda: make_app(broker), host, port, "kafkalite.metrics.http",
                    Guard(broker.http_access, host, json_bodies=False), task_status=task_status)
