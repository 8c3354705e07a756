"""What connections and partitions cost the broker: RSS growth per idle connection, per
partition, and the open file descriptors it needs.

Starts one kafkalite broker (``kafkalite.start()``), then: opens N idle connections (each
answered one ApiVersions) and reads the broker's RSS and fd count; closes them; creates P
partitions (T topics of P/T partitions through CreateTopics) and reads them again. RSS from
psutil right after each step (no settling wait: figures on a busy machine are noisy). With
`--fd-limit N` the broker runs under `ulimit -n N` (segment files go through a bounded cache
of open files, `log.segment.open.files.max`, half the limit by default).

    python -m bench.faults_load [--connections 1000] [--partitions 10000] [--topics 10] [--fd-limit 1024]
"""

from __future__ import annotations

import argparse
import time
import uuid

import kafkalite
from fault_tests.load import broker_figures, create_partitions, fd_soft_limit, open_connections, raise_fd_limit
from kafkalite.protocol.client import WireClient
import kio.schema.metadata.v12.request as md12


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.faults_load")
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--fd-limit", type=int, default=0, help="the broker's soft RLIMIT_NOFILE (default: raised "
                    "to connections + 1024)")
    args = ap.parse_args(argv)
    limit = raise_fd_limit(args.connections + 1024)
    if args.fd_limit:
        limit = args.fd_limit
    print(f"RLIMIT_NOFILE (soft) for the broker: {limit}")
    with fd_soft_limit(limit), kafkalite.running() as broker:
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
              f"{held['fds']} open fds (+{held['fds'] - base['fds']}; segment files are opened on demand, "
              f"at most log.segment.open.files.max at once)")


if __name__ == "__main__":
    main()
