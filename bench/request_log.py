"""The request log's cost on the produce and fetch paths: the log is on by default
(`request.log.size` 10 000), so every request pays for its entry (the key fields taken from the
request, the answered error from the response).

One broker per run (controls on a free port); on one connection of the raw protocol client,
`--requests` requests of each kind, after 500 of warm-up, with the log off, on, and off again
(the record-requests control switches it; "off again" shows the drift of the machine meanwhile):

* Produce: one 100-byte record per request, acks=1, one partition;
* Fetch: from offset 0 of a partition holding 1 000 100-byte records, at most 64 KiB
  (`max_wait` 0: the answer is what the log holds).

Microseconds per request round trip; each figure is the median of the runs' figures. On a
loaded machine the round trips vary more from run to run than the log costs, so the log's own
work is also timed in this process, without the network and the broker's loop: `record` of the
decoded Produce and Fetch requests and `answered` with the broker's answers (Produce's encoded
body, a decoded Fetch response of one partition), microseconds of CPU time per request (median of
5 x 2 000).

    python -m bench.request_log [--runs 5] [--requests 20000] [--json FILE]
"""

from __future__ import annotations

import argparse
import time

from bench.stats import Report, emit

MODES = (("off", False), ("on", True), ("off again", False))
WARMUP = 500


def _produce_request(topic: str):
    from compat_tests.differ.core import request
    from kafkalite.protocol.records import Record, build_batch

    batch = bytes(build_batch([Record(value=b"v" * 100)]))
    return request(0, 9, transactional_id=None, acks=1, timeout=5000,
                   topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}])


def _fetch_request(topic: str):
    from compat_tests.differ.core import request

    return request(1, 11, replica_id=-1, max_wait=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                   session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
                   topics=[{"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                            "fetch_offset": 0, "log_start_offset": -1,
                                                            "partition_max_bytes": 65536}]}])


def measure(broker, requests: int) -> dict[str, dict[str, float]]:
    """{"Produce"|"Fetch": {mode: microseconds per request}} on one broker."""
    from kafkalite.admin import AdminConnection
    from kafkalite.protocol.client import WireClient

    with AdminConnection(broker.bootstrap) as admin:
        for topic in ("log-produce", "log-fetch"):
            admin.create_topic(topic, 1, {})
            admin.wait_for_topic(topic, 1)
    fill = _produce_request("log-fetch")
    with WireClient(broker.bootstrap) as wire:
        for _ in range(1000):
            wire.request(fill)
    out: dict[str, dict[str, float]] = {}
    for api, req in (("Produce", _produce_request("log-produce")), ("Fetch", _fetch_request("log-fetch"))):
        out[api] = {}
        for label, enabled in MODES:
            broker.controls.record_requests(enabled=enabled)
            with WireClient(broker.bootstrap) as wire:
                for _ in range(WARMUP):
                    wire.request(req)
                t0 = time.perf_counter()
                for _ in range(requests):
                    wire.request(req)
                out[api][label] = (time.perf_counter() - t0) / requests * 1e6
    broker.controls.record_requests()
    return out


def measure_in_process(broker) -> dict[str, float]:
    """{"Produce"|"Fetch": microseconds of the log's work for one request}, in this process."""
    import statistics
    from types import SimpleNamespace

    from kafkalite.broker.request_log import RequestLog
    from kafkalite.protocol.client import WireClient
    from kafkalite.protocol.messages import EncodedBody

    with WireClient(broker.bootstrap) as wire:
        fetched = wire.request(_fetch_request("log-fetch"))
    cluster = SimpleNamespace(topics_by_id={})
    out = {}
    for api, key, version, req, answer in (("Produce", 0, 9, _produce_request("log-produce"), EncodedBody(b"x")),
                                           ("Fetch", 1, 11, _fetch_request("log-fetch"), fetched)):
        ctx = SimpleNamespace(header=SimpleNamespace(api_key=key, api_version=version, client_id="bench"),
                              peer="127.0.0.1:50000", listener=SimpleNamespace(name="PLAINTEXT"),
                              principal="User:ANONYMOUS", broker=SimpleNamespace(cluster=cluster))
        log = RequestLog()
        samples = []
        for _ in range(5):
            t0 = time.process_time()  # CPU time: what other processes take of the cores does not count
            for _ in range(2000):
                log.answered(log.record(ctx, req), answer, 0.0)
            samples.append((time.process_time() - t0) / 2000 * 1e6)
        out[api] = statistics.median(samples)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.request_log", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5, help="runs, one broker each (default 5)")
    p.add_argument("--requests", type=int, default=20_000, help="measured requests of each kind per mode")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = p.parse_args(argv)
    import kafkalite

    report = Report("request log: Produce and Fetch round trips with the log off and on")
    metrics = {api: report.metric("request log", f"{api} request round trip", "us", False)
               for api in ("Produce", "Fetch")}
    own = report.metric("request log", "the log's work per request, in process", "us", False)
    for _ in range(args.runs):
        with kafkalite.running(controls=0) as broker:
            for api, by_mode in measure(broker, args.requests).items():
                for label, us in by_mode.items():
                    metrics[api].add(f"log {label}", us)
            for api, us in measure_in_process(broker).items():
                own.add(api, us)
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
