"""Run every benchmark with defaults small enough to finish in a few minutes.

    python -m bench                      # same as python -m bench.run_all
    python -m bench --json results.json  # plus every figure as JSON
    python -m bench --only startup,throughput --brokers kafkalite,tansu

Each benchmark is also a module of its own with more options (``python -m bench.startup -h``).
A broker that cannot start is reported as failed in the tables; the other figures still print.
"""

from __future__ import annotations

import argparse
import time
import traceback

from bench import group_join, pytest_session, startup, throughput, transactions
from bench.peers import parse_brokers
from bench.stats import Report

# name -> runner with the quick defaults
BENCHMARKS = {
    "startup": lambda brokers, a: startup.run(brokers, runs=a.runs or 5),
    "throughput": lambda brokers, a: throughput.run(brokers, runs=a.runs or 3, records=a.records,
                                                    value_size=1024, warmup_records=10_000),
    "group_join": lambda brokers, a: group_join.run(brokers, runs=a.runs or 3),
    "pytest_session": lambda brokers, a: pytest_session.run(brokers, runs=a.runs or 3),
    "transactions": lambda brokers, a: transactions.run(brokers, runs=a.runs or 3,
                                                        records=a.records // 2, commits=30),
}


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", default="kafkalite,tansu")
    parser.add_argument("--only", default=",".join(BENCHMARKS),
                        help=f"comma-separated subset of {', '.join(BENCHMARKS)}")
    parser.add_argument("--runs", type=int, default=0, help="runs per broker (default: each benchmark's quick default)")
    parser.add_argument("--records", type=int, default=100_000, help="throughput records per run (default 100000)")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    brokers = parse_brokers(args.brokers)
    combined = Report("kafkalite benchmarks", settings={"brokers": args.brokers})
    for name in parse_brokers(args.only):
        if name not in BENCHMARKS:
            parser.error(f"unknown benchmark {name!r}")
        t0 = time.monotonic()
        try:
            report = BENCHMARKS[name](brokers, args)
        except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others
            combined.notes.append(f"{name} crashed:\n{traceback.format_exc()}")
            print(f"== {name} crashed ==\n{traceback.format_exc()}", flush=True)
            continue
        report.notes.append(f"{name} took {time.monotonic() - t0:.0f} s")
        print(report.render() + "\n", flush=True)
        combined.metrics.extend(report.metrics)
        combined.notes.extend(report.notes)
        combined.settings[name] = report.settings
    if args.json:
        combined.write_json(args.json)
        print(f"(json written to {args.json})")
    return combined


if __name__ == "__main__":
    main()
