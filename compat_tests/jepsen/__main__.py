"""The long mode: many seeded runs of a workload under faults, each checked.

    python -m compat_tests.jepsen --runs 200 --seed 1 [--workload queue|ctp] [--seconds 20]
                                  [--broker kafkalite|kafka] [--faults kill,pause,chaos,...]
                                  [--clients java,rdkafka,java,rdkafka] [--protocol classic|consumer] [--out DIR]

Workloads: ``queue`` (runner.py: random transactions and polls, four processes) and ``ctp``
(ctp.py: consume-transform-produce workers in one group, killed -9 mid-transaction; clients
java, rdkafka and franz, one worker each by default; the group protocol drawn from each seed
unless --protocol says). Seeds are SEED, SEED+1, ...; each run has a broker of its own; every
history is kept in --out (default a new temporary folder), and the broker's data of a run that
found something. A run with an anomaly prints its seed and the history lines that show it; the
exit status is 1 if any run had one (or could not finish). One run again: ``--runs 1 --seed N``.
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
from compat_tests.jepsen import ctp
from compat_tests.jepsen.faults import FAULTS
from compat_tests.jepsen.runner import BROKER_CONFIG, RunConfig, run, start_broker

DEFAULT_CLIENTS = {"queue": "java,rdkafka,java,rdkafka", "ctp": ",".join(ctp.CLIENTS)}
DEFAULT_SECONDS = {"queue": 20.0, "ctp": ctp.CtpConfig.seconds}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compat_tests.jepsen", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workload", choices=("queue", "ctp"), default="queue")
    ap.add_argument("--seconds", type=float, default=None, help="operations per run last this long")
    ap.add_argument("--broker", choices=brokers.KINDS, default=os.environ.get("COMPAT_BROKER", "kafkalite"))
    ap.add_argument("--faults", default=",".join(FAULTS),
                    help="comma-separated kinds of faults.FAULTS (those the broker supports are used), or ''")
    ap.add_argument("--clients", default=None, help="one worker process of each (java, rdkafka; ctp: franz too)")
    ap.add_argument("--protocol", choices=ctp.PROTOCOLS, default=None, help="ctp: the group protocol of every run")
    ap.add_argument("--out", default=None, help="folder for the histories")
    args = ap.parse_args(argv)
    os.environ["COMPAT_BROKER"] = args.broker
    out = args.out or tempfile.mkdtemp(prefix="jepsen-")
    Path(out).mkdir(parents=True, exist_ok=True)
    faults = tuple(f for f in args.faults.split(",") if f)
    clients = tuple(c for c in (args.clients or DEFAULT_CLIENTS[args.workload]).split(",") if c)
    seconds = args.seconds or DEFAULT_SECONDS[args.workload]
    bad, ops, writes, reads, faults_done, injected, kills, stalls = [], 0, 0, 0, 0, 0, 0, 0
    t0 = time.monotonic()
    for seed in range(args.seed, args.seed + args.runs):
        # A broker of its own for each run: runs do not share state, and a restart does not
        # reload the topics of every earlier run.
        data = Path(tempfile.mkdtemp(prefix=f"data-{seed}-", dir=out))
        broker = None
        try:
            if args.workload == "ctp":
                broker = start_broker(data, ctp.BROKER_CTP_CONFIG)
                r = ctp.run(broker, ctp.CtpConfig(seed=seed, seconds=seconds, clients=clients, faults=faults,
                                                  protocol=args.protocol), out)
            else:
                broker = start_broker(data, BROKER_CONFIG)
                r = run(broker, RunConfig(seed=seed, seconds=seconds, faults=faults, clients=clients), out)
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
        faults_done += len(r.faults)
        injected += r.chaos_injected
        kills += sum(f.startswith("kill-worker@") for f in r.faults)
        stalls += sum(f.startswith("stall-worker@") for f in r.faults)
        if r.result.valid and not r.errors:
            shutil.rmtree(data, ignore_errors=True)  # the history stays
            print(f"seed {seed}: ok {r.result.stats} faults: {', '.join(r.faults) or 'none'}", flush=True)
        else:
            bad.append(seed)
            print(r.report() + f"\n  broker data: {data}", flush=True)
    print(f"{args.runs} {args.workload} runs on {args.broker} ({','.join(clients)}), {ops} operations, "
          f"{writes} acknowledged writes, {reads} reads checked in {time.monotonic() - t0:.0f}s; "
          f"{faults_done} faults ({kills} worker kills -9, {stalls} worker stalls, {injected} faults injected by "
          f"chaos); "
          f"runs with anomalies or errors: {bad or 'none'}; histories in {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
