"""A broker out of file descriptors says so and goes on: under a soft RLIMIT_NOFILE of 256,
connections beyond it wait in the listen backlog while the log carries one line naming the limit
and the settings that decide it (no traceback), and once clients let go the broker answers again,
the waiting connections included (loopback, bounded in count and time)."""

from __future__ import annotations

import contextlib
import socket
import time
from typing import Iterator

import pytest

import kafkalite
from compat_tests.waiting import wait_until
import kio.schema.metadata.v12.request as md12
from kafkalite.protocol.client import WireClient

from .load import api_versions_frame, fd_soft_limit, readable

pytestmark = [pytest.mark.faults, pytest.mark.timeout(120)]

LIMIT = 256
EXTRA = 400        # connections beyond what the broker can accept


def _answered(socks: list[socket.socket], timeout: float) -> set[socket.socket]:
    """The sockets that received an answer (a frame's first bytes) within `timeout`."""
    got: set[socket.socket] = set()
    deadline = time.monotonic() + timeout
    while len(got) < len(socks) and time.monotonic() < deadline:
        for s in readable([s for s in socks if s not in got], 0.5):
            if s.recv(65536):
                got.add(s)
    return got


@contextlib.contextmanager
def _broker_under_limit(tmp_path) -> Iterator[kafkalite.Broker]:
    """A broker started under the low limit (it keeps it), while this process has its own back."""
    with fd_soft_limit(LIMIT):
        running = kafkalite.running(data_dir=tmp_path / "data")
        broker = running.__enter__()
    try:
        yield broker
    finally:
        running.__exit__(None, None, None)


def test_running_out_of_descriptors_is_one_line_and_not_a_crash(tmp_path):
    with _broker_under_limit(tmp_path) as broker:
        host, port = broker.bootstrap.rsplit(":", 1)
        frame = api_versions_frame()
        socks = []
        try:
            for _ in range(EXTRA):
                s = socket.create_connection((host, int(port)), timeout=10)   # the kernel's backlog
                s.sendall(frame)
                socks.append(s)
            wait_until(lambda: "out of file descriptors" in broker.log_text(), timeout=60,
                       what="the line saying the descriptors ran out")
            answered = _answered(socks, 2.0)
            waiting = [s for s in socks if s not in answered]
            assert waiting, "every connection was answered: the limit was not reached"
            held, socks = list(answered), waiting
            for s in held:
                s.close()
            # descriptors are free again: the connections that waited are answered now
            assert len(_answered(socks, 30.0)) == len(socks)
        finally:
            for s in socks:
                s.close()
        with WireClient(broker.bootstrap, timeout=30) as c:
            c.request(md12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                           include_topic_authorized_operations=False))
        text = broker.log_text()
        line = next(x for x in text.splitlines() if "out of file descriptors" in x)
        assert f"the {LIMIT} its soft RLIMIT_NOFILE allows" in line and "log.segment.open.files.max" in line
        assert "Traceback" not in text
        assert text.count("out of file descriptors") <= 3     # one line per 10 s, not one per accept
