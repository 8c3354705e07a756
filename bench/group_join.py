"""Group stabilisation: three confluent-kafka consumers join one group on a 6-partition topic.

Each run uses a fresh group id. Three consumers are created and connected (metadata fetched)
before the clock; then each, in its own thread, calls ``subscribe([topic])`` and keeps calling
``poll(0.02)``. The figure is the time from the *last* member's ``subscribe()`` until every
member holds a non-empty assignment and the three assignments are disjoint and cover all six
partitions (tracked through ``on_assign`` / ``on_revoke``). Also shown: how many assignments the
members received in total before that (3 means one rebalance; more means extra rounds).

Consumer settings are librdkafka's defaults (classic protocol, range/roundrobin assignors,
heartbeat.interval.ms=3000) unless ``--consumer-config key=value`` is given.

Target: kafkalite <= 1 s (a Kafka broker with default settings takes over 3 s,
because of group.initial.rebalance.delay.ms=3000).

    python -m bench.group_join [--runs 5] [--members 3] [--partitions 6] [--json FILE]
"""

from __future__ import annotations

import threading
import time
import uuid

from bench import peers
from bench.stats import Report, Target, alternate, apply_common_arguments, common_parser, emit, failure

TIMEOUT = 30.0


def join_once(bootstrap: str, topic: str, members: int, partitions: int,
              extra_config: dict[str, str] | None = None, timeout: float = TIMEOUT) -> tuple[float, int]:
    """Seconds from the last subscribe() until the group's assignment is complete; assignments seen."""
    from confluent_kafka import Consumer

    group = f"bench-group-{uuid.uuid4().hex[:8]}"
    lock = threading.Lock()
    assigned: dict[int, set[int]] = {i: set() for i in range(members)}
    subscribed_at: dict[int, float] = {}
    stable_at: list[float] = []
    assign_calls = [0]
    stop = threading.Event()
    go = threading.Event()
    errors: list[str] = []

    def check() -> None:
        if stable_at:
            return
        sets = list(assigned.values())
        if all(sets) and sum(len(s) for s in sets) == partitions and len(set().union(*sets)) == partitions:
            stable_at.append(time.perf_counter())

    consumers = []
    for i in range(members):
        conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": f"bench-member-{i}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        conf.update(extra_config or {})
        c = Consumer(conf)
        c.list_topics(topic, timeout=30)
        consumers.append(c)

    def member(i: int) -> None:
        c = consumers[i]

        def on_assign(_c, tps) -> None:
            with lock:
                assign_calls[0] += 1
                assigned[i] |= {tp.partition for tp in tps}
                check()

        def on_revoke(_c, tps) -> None:
            with lock:
                assigned[i] -= {tp.partition for tp in tps}

        go.wait()
        c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        with lock:
            subscribed_at[i] = time.perf_counter()
        while not stop.is_set():
            try:
                msg = c.poll(0.02)
                if msg is not None and msg.error() is not None and msg.error().fatal():
                    errors.append(str(msg.error()))
                    return
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{type(exc).__name__}: {exc}")
                return

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(members)]
    for t in threads:
        t.start()
    try:
        go.set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not errors:
            with lock:
                if stable_at:
                    break
            time.sleep(0.005)
        with lock:
            done = bool(stable_at)
            result = (stable_at[0] - max(subscribed_at.values()), assign_calls[0]) if done else None
            state = {i: sorted(s) for i, s in assigned.items()}
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        closers = [threading.Thread(target=c.close, daemon=True) for c in consumers]
        for t in closers:
            t.start()
        for t in closers:
            t.join(30)
    if errors:
        raise RuntimeError(errors[0])
    if result is None:
        raise TimeoutError(f"group not complete within {timeout}s; assignments {state}")
    return result


def run(brokers: list[str], runs: int, members: int = 3, partitions: int = 6,
        extra_config: dict[str, str] | None = None) -> Report:
    report = Report(
        f"group_join: {members} confluent-kafka consumers, {partitions} partitions",
        settings={"runs": runs, "members": members, "partitions": partitions,
                  "consumer_config": extra_config or "librdkafka defaults"},
    )
    t_metric = report.metric("group_join", "last subscribe to all assigned", "ms", False,
                             [Target("at_most", 1000.0)])
    n_metric = report.metric("group_join", "assignments received", "count", False)
    with peers.running_in_order(brokers, t_metric) as (running, order):
        topics = {}
        for name in order:
            topics[name] = f"bench-group-{uuid.uuid4().hex[:8]}"
            try:
                peers.create_topic(running[name].bootstrap, topics[name], partitions=partitions)
            except Exception as exc:  # noqa: BLE001
                t_metric.fail(name, f"create topic: {exc}")
                topics.pop(name)
        order = [n for n in order if n in topics]
        for rnd, name in alternate(order, runs):
            try:
                secs, calls = join_once(running[name].bootstrap, topics[name], members, partitions,
                                        extra_config)
            except Exception as exc:  # noqa: BLE001
                t_metric.fail(name, failure(f"round {rnd}", exc))
                continue
            t_metric.add(name, secs * 1000.0)
            n_metric.add(name, calls)
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = common_parser(__doc__, runs=5)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--consumer-config", action="append", default=[], metavar="KEY=VALUE",
                        help="extra librdkafka consumer setting (repeatable)")
    args = parser.parse_args(argv)
    apply_common_arguments(args)
    extra = dict(kv.split("=", 1) for kv in args.consumer_config)
    report = run(peers.parse_brokers(args.brokers), args.runs, args.members, args.partitions, extra)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
