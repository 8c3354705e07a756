"""The group-and-lag-0 scenario of broker/tests/test_group_lag_waits.py run many times on a
loaded machine, two ways side by side:

* waits: the broker's `wait-group` and `wait-committed` (30 s timeouts, answered on the change);
* polling: as such tests are usually written, from the client side: AdminClient
  describe_consumer_groups every 0.5 s until the group is Stable with a member holding
  partitions (10 s at most), then a 1 s sleep "for the consumer to catch up" and one
  list_consumer_group_offsets whose sum must be the records produced.

A parallel job loads the machine meanwhile: `--load` processes spinning on the CPU at nice 10,
stopped at the end. One broker (controls on a free port) serves every run; the runs alternate.
Prints, per way, the runs, the failures and each failure's first line, and the median seconds a
passing run took.

    python -m bench.waits_stress [--runs 50] [--load 1] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

SPIN = "import time\nend = time.monotonic() + float(__import__('sys').argv[1])\nwhile time.monotonic() < end: pass\n"


def with_polling(broker) -> None:
    from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    from kafkalite.broker.tests.test_group_lag_waits import RECORDS, scenario
    from compat_tests.clients.librdkafka import LibrdkafkaClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def wait_for_group(group: str, topic: str) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            d = admin.describe_consumer_groups([group])[group].result(5)
            if d.state == ConsumerGroupState.STABLE and d.members and d.members[0].assignment.topic_partitions:
                return
            time.sleep(0.5)
        raise AssertionError(f"group {group} not Stable with partitions within 10 s")

    def wait_for_lag_zero(group: str, topic: str) -> None:
        time.sleep(1)  # for the consumer to catch up
        got = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(5)
        committed = sum(tp.offset for tp in got.topic_partitions if tp.offset >= 0)
        assert committed == RECORDS, f"committed {committed} of {RECORDS}"

    scenario(broker.bootstrap, LibrdkafkaClient(broker.bootstrap).create_topic, wait_for_group, wait_for_lag_zero)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.waits_stress", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=50, help="runs of each way (default 50)")
    p.add_argument("--load", type=int, default=1, help="CPU-spinning processes beside the runs (default 1)")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = p.parse_args(argv)
    import kafkalite
    from kafkalite.broker.tests.test_group_lag_waits import with_waits

    ways = {"waits": with_waits, "polling": with_polling}
    results: dict[str, dict] = {name: {"runs": 0, "failures": [], "seconds": []} for name in ways}
    load = [subprocess.Popen(["nice", "-n", "10", sys.executable, "-c", SPIN, str(args.runs * 30)])
            for _ in range(args.load)]
    try:
        with kafkalite.running(controls=0) as broker:
            for i in range(args.runs):
                for name, way in ways.items():
                    t0 = time.monotonic()
                    try:
                        way(broker)
                        results[name]["seconds"].append(time.monotonic() - t0)
                    except Exception as exc:  # noqa: BLE001 - counted and described
                        first = "".join(traceback.format_exception_only(exc)).strip().splitlines()[0]
                        results[name]["failures"].append(f"run {i + 1}: {first}")
                    results[name]["runs"] += 1
                print(f"run {i + 1}: " + ", ".join(f"{n} {len(r['failures'])} failed" for n, r in results.items()),
                      flush=True)
    finally:
        for proc in load:
            proc.kill()
            proc.wait()
    print(f"load: {args.load} spinning process(es); loadavg {os.getloadavg()}")
    for name, r in results.items():
        median = statistics.median(r["seconds"]) if r["seconds"] else None
        print(f"{name}: {r['runs']} runs, {len(r['failures'])} failed, median {median and round(median, 2)} s")
        for failure in r["failures"]:
            print(f"    {failure}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 1 if results["waits"]["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
