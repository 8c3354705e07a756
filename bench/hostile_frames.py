"""The broker under hostile frames (fault_tests.hostile): its RSS under each attack and a real
client's round-trip latency meanwhile, medians of `--runs` runs, each on a new broker.

- four 64 MiB frame headers before SASL authentication (closed: sasl.server.max.receive.size);
- four 64 MiB frame headers never followed, on PLAINTEXT;
- 1 000 connections dribbling a frame header a byte a second while confluent-kafka produces
  record after record (acks=all, one at a time);
- 10 000 connections opened at once against a broker limited to 1 024 descriptors.

    python -m bench.hostile_frames [--runs 3] [--dribblers 1000] [--flood 10000]
"""

from __future__ import annotations

import argparse

import kafkalite
from bench.stats import median
from fault_tests.hostile import (
    LISTENERS, MIB, SASL_CONFIG, Figures, announce_64_mib, broker_with_fd_limit, connection_flood, dribble_headers,
)


def _one_run(dribblers: int, flood: int) -> list[Figures]:
    with kafkalite.running(listeners=LISTENERS, config=SASL_CONFIG) as broker:
        figures = [announce_64_mib(broker, "SASL_PLAINTEXT", close_timeout=10),
                   announce_64_mib(broker, "PLAINTEXT")]
    with kafkalite.running() as broker:
        figures.append(dribble_headers(broker, n=dribblers, seconds=4))
    with broker_with_fd_limit(1024) as broker:
        figures.append(connection_flood(broker, n=flood, seconds=10))
    return figures


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.hostile_frames")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dribblers", type=int, default=1000)
    ap.add_argument("--flood", type=int, default=10_000)
    args = ap.parse_args(argv)
    runs = []
    for i in range(args.runs):
        figures = _one_run(args.dribblers, args.flood)
        for fig in figures:
            print(f"run {i + 1}: {fig.line()}")
        runs.append(figures)
    print(f"medians of {args.runs} runs:")
    for j, fig in enumerate(runs[0]):
        growth = median([r[j].growth / MIB for r in runs])
        peak = median([r[j].rss_peak / MIB for r in runs])
        lat = [t for r in runs for t in r[j].latencies_s]
        latency = (f"client round trip median {median(lat) * 1000:.1f} ms, max {max(lat) * 1000:.1f} ms"
                   if lat else "no client round trips")
        print(f"  {fig.name}: RSS peak {peak:.1f} MiB (+{growth:.1f}); {latency}")


if __name__ == "__main__":
    main()
