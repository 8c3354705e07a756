"""An idle connection costs the broker a few pages, not a whole receive buffer (each one
used to hold 256 KiB resident: 1 000 idle clients took 270 MB)."""

from __future__ import annotations

import socket
import struct

import psutil

from kafkalite.protocol.client import WireClient

import kio.schema.api_versions.v0.request as av0

CONNECTIONS = 300


def test_idle_connections_stay_small(broker):
    proc = psutil.Process(broker.pid)
    host, port = broker.bootstrap.rsplit(":", 1)
    enc = WireClient.__new__(WireClient)
    enc.client_id = "idle"
    payload = WireClient.encode(enc, av0.ApiVersionsRequest(), 1)
    frame = struct.pack(">i", len(payload)) + payload
    # one connection first, so that per-process warm-up is not counted
    with WireClient(broker.bootstrap) as c:
        c.request(av0.ApiVersionsRequest())
    before = proc.memory_info().rss
    socks = []
    try:
        for _ in range(CONNECTIONS):
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(frame)
            socks.append(s)
        for s in socks:
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            s.recv(size, socket.MSG_WAITALL)
        per_connection = (proc.memory_info().rss - before) / CONNECTIONS
    finally:
        for s in socks:
            s.close()
    assert per_connection < 64 * 1024, f"{per_connection / 1024:.0f} KiB resident per idle connection"
