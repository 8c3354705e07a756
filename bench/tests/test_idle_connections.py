"""bench.idle_connections: produce round trips beside idle connections, and its guard against a
broker that drops them."""

from __future__ import annotations

import kafkalite
from bench import idle_connections


def test_each_count_gets_its_round_trips_and_the_target_compares_the_largest_with_the_smallest():
    report = idle_connections.run(["kafkalite"], runs=1, counts=(3, 60), records=10, warmup=2)
    p50, p99, rss = report.metrics
    assert not any(m.errors for m in report.metrics), [m.errors for m in report.metrics]
    rows = ["kafkalite, 3 idle", "kafkalite, 60 idle"]
    for row in rows:
        assert 0 < p50.medians()[row] <= p99.medians()[row]
        assert rss.medians()[row] > 1  # MiB of a running broker
    (target,) = p99.targets
    assert (target.broker, target.peer, target.value) == (rows[1], rows[0], 1.5)


def test_idle_connections_a_broker_closed_are_counted_as_unanswered():
    with kafkalite.running() as broker:
        idle = idle_connections.open_idle(broker.bootstrap, 8)
        assert idle_connections.still_served(idle) == 8
    try:
        assert idle_connections.still_served(idle) == 0
    finally:
        for conn in idle:
            conn.close()


def test_percentiles_are_inclusive_of_the_extremes():
    values = [float(v) for v in range(1, 101)]
    assert idle_connections.percentile(values, 50) == 50.5
    assert idle_connections.percentile(values, 99) == 99.01
    assert idle_connections.percentile([1.0, 9.0], 99) == 8.92
