"""Hostile frames (fault_tests.hostile) against a live broker: memory follows the bytes that
arrive, a SASL listener reads at most sasl.server.max.receive.size before authentication, slow
and numerous connections leave a real client served, and running out of descriptors is a log
line, not a crash. The figures are printed (`-s`) and by `python -m bench.hostile_frames`."""

from __future__ import annotations

import socket
import struct

import pytest

import kafkalite
from kafkalite.tests import suite_brokers

from .hostile import (
    LISTENERS, MIB, SASL_CONFIG, address, announce_64_mib, broker_with_fd_limit, connection_flood, dribble_headers,
    round_trip, wait_for,
)
from .load import api_versions_frame

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(listeners=LISTENERS, config=SASL_CONFIG, log_level="INFO") as b:
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
    # each header announces 1 MiB: a thousand of them cost what arrived (~10 KiB a connection
    # here), never the 1 GiB announced
    assert fig.growth < 64 * MIB, fig.line()
    _no_traceback(broker)


def test_ten_thousand_connections_at_once_hit_the_descriptor_limit_with_a_log_line():
    with broker_with_fd_limit(1024, log_level="INFO") as broker:
        fig = connection_flood(broker, n=10_000, seconds=10)
        print(fig.line())
        text = broker.log_text()
        assert "out of file descriptors while accepting connections on PLAINTEXT" in text, text[-3000:]
        assert text.count("while accepting connections") <= text.count("accepting connections on PLAINTEXT again") + 1
        assert broker.process.poll() is None, "the broker died"
        assert not [n for n in fig.notes if n.startswith("delivery")], fig.line()
        assert fig.growth < 64 * MIB, fig.line()
        _no_traceback(broker)


def test_queued_max_request_bytes_stops_reading_until_memory_is_freed():
    """One connection's announced frame takes the whole pool: the next request of another
    connection is not read until that connection goes and its frame's memory is given back."""
    limit = 1 << 20
    config = {"queued.max.request.bytes": limit, "socket.request.max.bytes": limit}
    with suite_brokers.running(config=config, log_level="INFO") as broker:
        hog = socket.create_connection(address(broker.bootstrap), timeout=10)
        hog.sendall(struct.pack(">i", limit) + b"\x00\x12")
        waiting = socket.create_connection(address(broker.bootstrap), timeout=10)
        with hog, waiting:
            waiting.sendall(api_versions_frame())
            # the line comes only when a connection waits: the hog's frame was granted first
            # (granted after it, with anything left, the hog's frame would have been too)
            wait_for(lambda: "queued.max.request.bytes=1048576 is used up" in broker.log_text(), 10,
                     "a connection waiting for memory")
            waiting.settimeout(0.5)
            with pytest.raises(socket.timeout):
                waiting.recv(4)
            hog.close()
            waiting.settimeout(10)
            assert len(waiting.recv(4)) == 4, "not answered once the memory was freed"
        _no_traceback(broker)
