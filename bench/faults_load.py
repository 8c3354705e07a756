"""What connections and partitions cost the broker: RSS growth per idle connection, per
partition, and the open file descriptors it needs.

Starts one kafkalite broker (``kafkalite.start()``), then: opens N idle connections (each
answered one ApiVersions) and reads the broker's RSS and fd count; closes them; creates P
partitions (T topics of P/T partitions through CreateTopics) and reads them again. RSS from
psutil right after each step (no settling wait: figures on a busy machine are noisy).

    python -m bench.faults_load [--connections 1000] [--partitions 10000] [--topics 10]
"""

from __future__ import annotations

import argparse
import time
import uuid

import kafkalite
from fault_tests.load import broker_figures, create_partitions, open_connections, raise_fd_limit
from protocol.client import WireClient
import kio.schema.metadata.v12.request as md12


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.faults_load")
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--topics", type=int, default=10)
    args = ap.parse_args(argv)
    limit = raise_fd_limit(args.partitions + args.connections + 1024)
    print(f"RLIMIT_NOFILE (soft) for this process and the broker: {limit}")
    with kafkalite.running() as broker:
        with WireClient(broker.bootstrap) as c:
            c.request(md12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                           include_topic_authorized_operations=False))
        base = broker_figures(broker.pid)
        print(f"broker at start: RSS {base['rss'] / 2**20:.1f} MiB, {base['fds']} open fds")
        socks, secs = open_connections(broker.bootstrap, args.connections)
        held = broker_figures(broker.pid)
        print(f"{args.connections} idle connections opened and answered in {secs:.2f} s: "
              f"RSS +{(held['rss'] - base['rss']) / 2**20:.1f} MiB "
              f"= {(held['rss'] - base['rss']) / args.connections / 1024:.1f} KiB per connection; "
              f"{held['fds']} open fds (+{held['fds'] - base['fds']})")
        for s in socks:
            s.close()
        time.sleep(1)
        base = broker_figures(broker.pid)
        per_topic = args.partitions // args.topics
        secs = create_partitions(broker.bootstrap, [f"bench-{uuid.uuid4().hex[:6]}-{i}" for i in range(args.topics)],
                                 per_topic, timeout=600)
        held = broker_figures(broker.pid)
        n = per_topic * args.topics
        print(f"{n} partitions ({args.topics} topics) created in {secs:.1f} s: "
              f"RSS +{(held['rss'] - base['rss']) / 2**20:.1f} MiB "
              f"= {(held['rss'] - base['rss']) / n / 1024:.2f} KiB per partition; "
              f"{held['fds']} open fds (+{held['fds'] - base['fds']}: one open segment file per partition)")
        print(f"the broker needs ulimit -n >= partitions + connections + about 20 "
              f"({n + args.connections + 20} here)")


if __name__ == "__main__":
    main()
