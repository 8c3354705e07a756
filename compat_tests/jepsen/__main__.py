"""The long mode: many seeded runs of the queue workload under faults, each checked.

    python -m compat_tests.jepsen --runs 200 --seed 1 [--seconds 20] [--broker kafkalite|kafka]
                                  [--faults kill,pause,...] [--clients java,rdkafka,java,rdkafka] [--out DIR]

Seeds are SEED, SEED+1, ...; each run has a broker of its own; every history is kept in --out
(default a new temporary folder), and the broker's data of a run that found something.
A run with an anomaly prints its seed and the history lines that show it; the exit status is 1
if any run had one (or could not finish). One run again: ``--runs 1 --seed N``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from compat_tests import brokers
from compat_tests.jepsen.faults import FAULTS
from compat_tests.jepsen.runner import RunConfig, run, start_broker


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compat_tests.jepsen", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=20.0, help="operations per run last this long")
    ap.add_argument("--broker", choices=brokers.KINDS, default=os.environ.get("COMPAT_BROKER", "kafkalite"))
    ap.add_argument("--faults", default=",".join(FAULTS),
                    help="comma-separated kinds of faults.FAULTS (those the broker supports are used), or ''")
    ap.add_argument("--clients", default="java,rdkafka,java,rdkafka")
    ap.add_argument("--out", default=None, help="folder for the histories")
    args = ap.parse_args(argv)
    os.environ["COMPAT_BROKER"] = args.broker
    out = args.out or tempfile.mkdtemp(prefix="jepsen-")
    Path(out).mkdir(parents=True, exist_ok=True)
    faults = tuple(f for f in args.faults.split(",") if f)
    clients = tuple(c for c in args.clients.split(",") if c)
    bad, ops, writes, reads = [], 0, 0, 0
    t0 = time.monotonic()
    for seed in range(args.seed, args.seed + args.runs):
        # A broker of its own for each run: runs do not share state, and a restart does not
        # reload the topics of every earlier run.
        data = Path(tempfile.mkdtemp(prefix=f"data-{seed}-", dir=out))
        broker = None
        try:
            broker = start_broker(data)
            r = run(broker, RunConfig(seed=seed, seconds=args.seconds, faults=faults, clients=clients), out)
        except Exception as e:  # noqa: BLE001 - a run that cannot finish is reported with its seed
            print(f"seed {seed}: run failed: {e!r}", flush=True)
            bad.append(seed)
            continue
        finally:
            if broker is not None:
                broker.close()
        ops += r.result.stats["ops"]
        writes += r.result.stats["acknowledged_writes"]
        reads += r.result.stats["reads"]
        if r.result.valid and not r.errors:
            shutil.rmtree(data, ignore_errors=True)  # the history stays
            print(f"seed {seed}: ok {r.result.stats} faults: {', '.join(r.faults) or 'none'}", flush=True)
        else:
            bad.append(seed)
            print(r.report() + f"\n  broker data: {data}", flush=True)
    print(f"{args.runs} runs on {args.broker}, {ops} operations, {writes} acknowledged writes, {reads} reads "
          f"checked in {time.monotonic() - t0:.0f}s; runs with anomalies or errors: {bad or 'none'}; histories in {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
