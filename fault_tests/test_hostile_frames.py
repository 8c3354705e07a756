"""Hostile frames (fault_tests.hostile) against a live broker: memory follows the bytes that
arrive, a SASL listener reads at most sasl.server.max.receive.size before authentication, slow
and numerous connections leave a real client served, and running out of descriptors is a log
line, not a crash. The figures are printed (`-s`) and by `python -m bench.hostile_frames`."""

from __future__ import annotations

import pytest

import kafkalite

from .hostile import (
    LISTENERS, MIB, SASL_CONFIG, announce_64_mib, broker_with_fd_limit, connection_flood, dribble_headers, round_trip,
)

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def broker():
    with kafkalite.running(listeners=LISTENERS, config=SASL_CONFIG, log_level="INFO") as b:
        yield b


def _no_traceback(broker: kafkalite.Broker) -> None:
    text = broker.log_text()
    assert "Traceback" not in text, text[text.index("Traceback") - 500:][:4000]


def test_unauthenticated_64_mib_headers_on_a_sasl_listener_are_refused_and_cost_nothing(broker):
    fig = announce_64_mib(broker, "SASL_PLAINTEXT", close_timeout=10)
    print(fig.line())
    assert fig.closed_by_broker == 4, fig.line()
    assert fig.growth < 40 * MIB, fig.line()
    assert broker.log_text().count("exceeds sasl.server.max.receive.size=524288") >= 4
    _no_traceback(broker)


def test_64_mib_headers_never_followed_on_plaintext_cost_what_arrived(broker):
    fig = announce_64_mib(broker, "PLAINTEXT")
    print(fig.line())
    assert fig.growth < 100 * MIB, fig.line()
    round_trip(broker.bootstrap)
    _no_traceback(broker)


def test_a_thousand_connections_dribbling_headers_leave_a_real_client_served(broker):
    fig = dribble_headers(broker, n=1000, seconds=4)
    print(fig.line())
    assert not fig.notes, fig.line()            # every record was acknowledged
    assert len(fig.latencies_s) >= 3, fig.line()
    assert max(fig.latencies_s) < 2.0, fig.line()
    _no_traceback(broker)


def test_ten_thousand_connections_at_once_hit_the_descriptor_limit_with_a_log_line():
    with broker_with_fd_limit(1024, log_level="INFO") as broker:
        fig = connection_flood(broker, n=10_000, seconds=10)
        print(fig.line())
        text = broker.log_text()
        assert "cannot accept connections on PLAINTEXT" in text, text[-3000:]
        assert text.count("cannot accept connections") <= text.count("accepting connections on PLAINTEXT again") + 1
        assert broker.process.poll() is None, "the broker died"
        assert not [n for n in fig.notes if n.startswith("delivery")], fig.line()
        _no_traceback(broker)
