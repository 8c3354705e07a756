"""Where a partition's memory goes: the Python objects one partition holds once loaded at start and
once opened, from tracemalloc snapshots of one process. A Cluster with `--topics` topics of
`--partitions` partitions each is created and closed on a temporary data dir, then loaded again
(one node: partitions are left to open on first use) and every partition opened, as the server's
background pass does. kafkalite only, in-process: no broker, no peer.

    python -m bench.partition_memory [--topics T] [--partitions P] [--top N]

Prints bytes and objects per partition at load, at open and in total, and the source lines that
allocated the most of each. RSS (what bench.scale measures) follows these figures, plus the
allocator's overhead.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import tracemalloc
from pathlib import Path

from kafkalite.broker.cluster import Cluster
from kafkalite.broker.settings.broker_config import BrokerConfig
from kafkalite.broker.settings.listeners import Listener


def _cluster(data_dir: Path) -> Cluster:
    config = BrokerConfig(data_dir=data_dir, listeners=[Listener("PLAINTEXT", "127.0.0.1", 0)], values={})
    cluster = Cluster(config)
    cluster.load()
    return cluster


def measure(topics: int, partitions: int) -> dict[str, list[tracemalloc.StatisticDiff]]:
    """The allocations still held after loading and after opening, by source line."""
    with tempfile.TemporaryDirectory(prefix="partition-memory-") as d:
        data_dir = Path(d)
        created = _cluster(data_dir)
        for t in range(topics):
            created.create_topic(f"t{t}", partitions)
        created.close()
        del created
        gc.collect()
        tracemalloc.start(1)
        try:
            empty = tracemalloc.take_snapshot()
            cluster = _cluster(data_dir)
            gc.collect()
            loaded = tracemalloc.take_snapshot()
            for part in cluster.not_yet_open():
                part.open_now()
            gc.collect()
            opened = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        assert not cluster.not_yet_open()
        cluster.close()
        return {"load": loaded.compare_to(empty, "lineno"), "open": opened.compare_to(loaded, "lineno"),
                "total": opened.compare_to(empty, "lineno")}


def _where(stat: tracemalloc.StatisticDiff) -> str:
    frame = stat.traceback[0]
    path = frame.filename
    for root in (os.getcwd() + os.sep, os.path.dirname(os.__file__) + os.sep):
        if path.startswith(root):
            path = path[len(root):]
    return f"{path}:{frame.lineno}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=100, help="partitions per topic (default 100)")
    parser.add_argument("--top", type=int, default=10, help="source lines shown per phase (default 10)")
    a = parser.parse_args(argv)
    n = a.topics * a.partitions
    phases = measure(a.topics, a.partitions)
    print(f"== partition memory: Python objects held per partition, {a.topics} topics x {a.partitions} "
          f"partitions, one segment each (tracemalloc) ==")
    for phase, stats in phases.items():
        size = sum(s.size_diff for s in stats)
        count = sum(s.count_diff for s in stats)
        print(f"{phase:6s} {size / n:8.0f} B per partition  {count / n:6.2f} objects per partition")
        if phase == "total":
            continue
        for s in sorted(stats, key=lambda s: -abs(s.size_diff))[:a.top]:
            print(f"         {s.size_diff / n:8.0f} B  {s.count_diff / n:6.2f} obj  {_where(s)}")


if __name__ == "__main__":
    main()
