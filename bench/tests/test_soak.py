"""bench.soak's measures: growth from the settled sample, and open files without sockets."""

from __future__ import annotations

import os
import socket

from bench import soak


def _sample(minute: float, rss: float, files: int) -> soak.Sample:
    return soak.Sample(minute, rss, files, 2, 20, 4, {}, 0)


def test_growth_is_measured_from_the_first_sample_after_settling():
    samples = [_sample(0, 30, 10), _sample(5, 40, 20), _sample(10, 50, 20), _sample(60, 52, 21)]
    assert round(soak.growth(samples, 10, "rss_mib"), 3) == 0.04
    assert round(soak.growth(samples, 10, "open_files"), 3) == 0.05
    # the warm-up's climb does not count; nothing to compare when the run ended before settling
    assert soak.growth(samples, 61, "rss_mib") is None
    assert soak.growth(samples[:3], 10, "rss_mib") is None


def test_open_files_count_files_and_leave_sockets_out(tmp_path):
    before = soak.open_files(os.getpid())
    with open(tmp_path / "f", "w"), socket.socket() as s, socket.socket():
        assert s.fileno() >= 0
        assert soak.open_files(os.getpid()) == before + 1
    assert soak.open_files(os.getpid()) == before
