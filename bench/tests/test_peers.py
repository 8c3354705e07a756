"""bench.peers' kafkalite@PATH: another checkout's broker, for before/after ratios in one run."""

from __future__ import annotations

import sys

import pytest

from bench import peers, wire


def test_a_checkout_runs_its_own_broker_and_stops():
    peer = peers.start_peer(f"kafkalite@{peers.REPO_ROOT}")
    try:
        assert peer.name == f"kafkalite@{peers.REPO_ROOT}"
        wire.wait_for_metadata(peer.host, peer.port, 10)
    finally:
        peer.stop()
    with pytest.raises(wire.WireError):  # stopped: nothing listens there any more
        wire.wait_for_metadata(peer.host, peer.port, 0.5)


def test_a_checkout_from_before_the_single_package_runs_its_broker_package(tmp_path):
    (tmp_path / "broker").mkdir()
    cmd, env = peers.launch_command(f"kafkalite@{tmp_path}", 9, tmp_path / "data")
    assert cmd[:4] == [sys.executable, "-P", "-m", "broker"] and env["PYTHONPATH"] == str(tmp_path)
    cmd, env = peers.launch_command(f"kafkalite@{peers.REPO_ROOT}", 9, tmp_path / "data")
    assert cmd[3] == "kafkalite" and env["PYTHONPATH"] == str(peers.REPO_ROOT)
    with pytest.raises(peers.PeerUnavailable):
        peers.launch_command(f"kafkalite@{tmp_path / 'missing'}", 9, tmp_path / "data")
