"""Share groups (KIP-932): the ShareFetch / ShareAcknowledge round trip, and records per second for
three share consumers on one partition.

* round trip: one member (raw protocol, protocol/client.py) joins a fresh share group with
  ShareGroupHeartbeat and opens its share session; then, per record, a ShareFetch with
  max_records=1 (the time until the answer holding one acquired record) and a ShareAcknowledge
  accepting it (the time until its answer). Medians over the records of a run, in ms.
* throughput: N records are produced first; three confluent-kafka ShareConsumers (librdkafka,
  implicit acknowledgement), each on its own thread, subscribe to the one partition of the topic
  with a fresh group that starts at the earliest offset; records/s from the subscribes until all N
  were delivered (each record once).

Each group starts at the earliest offset through the group config share.auto.offset.reset
(IncrementalAlterConfigs on the GROUP resource). Brokers default to kafkalite and Apache Kafka
(compat_tests/reference.py), alternating.

    python -m bench.share_groups [--runs 3] [--records 20000] [--round-trips 200] [--json FILE]
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

from bench import peers, throughput
from bench.stats import Report, alternate, apply_common_arguments, common_parser, emit, failure

TIMEOUT = 120.0


def _wire(bootstrap: str):
    from kafkalite.protocol.client import WireClient

    return WireClient(bootstrap, timeout=30)


def set_earliest(bootstrap: str, group: str) -> None:
    from kio.schema.incremental_alter_configs.v1.request import (AlterableConfig, AlterConfigsResource,
                                                                 IncrementalAlterConfigsRequest)
    from kio.static.primitive import i8

    req = IncrementalAlterConfigsRequest(validate_only=False, resources=(AlterConfigsResource(
        resource_type=i8(32), resource_name=group, configs=(AlterableConfig(
            name="share.auto.offset.reset", config_operation=i8(0), value="earliest"),)),))
    with _wire(bootstrap) as w:
        r = w.request(req)
    if r.responses[0].error_code != 0:
        raise RuntimeError(f"group config: {r.responses[0].error_code} {r.responses[0].error_message}")


def topic_id(bootstrap: str, topic: str):
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

    with _wire(bootstrap) as w:
        r = w.request(MetadataRequest(topics=(MetadataRequestTopic(topic_id=None, name=topic),),
                                      allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return r.topics[0].topic_id


def round_trips(bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    """(median ShareFetch ms, median ShareAcknowledge ms) over n records."""
    from kio.schema.share_acknowledge.v2 import request as ack_req
    from kio.schema.share_fetch.v2 import request as fetch_req
    from kio.schema.errors import ErrorCode
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
    from kio.static.primitive import i8, i32, i64

    RETRIABLE = (ErrorCode.coordinator_not_available, ErrorCode.not_coordinator,
                 ErrorCode.coordinator_load_in_progress)
    group = f"bench-share-rt-{uuid.uuid4().hex[:8]}"
    set_earliest(bootstrap, group)
    tid = topic_id(bootstrap, topic)
    member = str(uuid.uuid4())
    fetches: list[float] = []
    acks: list[float] = []
    with _wire(bootstrap) as w:
        # a fresh Kafka creates and loads its group coordinator on the first lookups: retry until it answers
        deadline = time.monotonic() + TIMEOUT
        while True:
            w.request(FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(group,)))
            hb = w.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=i32(0),
                                                      rack_id=None, subscribed_topic_names=(topic,)))
            if hb.error_code not in RETRIABLE or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if hb.error_code != 0:
            raise RuntimeError(f"heartbeat: {hb.error_code}")
        epoch = 0
        got = 0
        deadline = time.monotonic() + TIMEOUT
        while got < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{got} of {n} round trips within {TIMEOUT}s")
            req = fetch_req.ShareFetchRequest(
                group_id=group, member_id=member, share_session_epoch=i32(epoch), max_wait=timedelta(seconds=1),
                min_bytes=i32(1), max_bytes=i32(1 << 20), max_records=i32(1), batch_size=i32(1),
                share_acquire_mode=i8(1), is_renew_ack=False,
                topics=(fetch_req.FetchTopic(topic_id=tid, partitions=(fetch_req.FetchPartition(
                    partition_index=i32(0), acknowledgement_batches=()),)),), forgotten_topics_data=())
            t0 = time.perf_counter()
            r = w.request(req)
            t1 = time.perf_counter()
            if r.error_code != 0:
                raise RuntimeError(f"share fetch: {r.error_code}")
            epoch += 1
            acquired = [a for t in r.responses for p in t.partitions for a in p.acquired_records]
            if not acquired:
                continue  # Kafka initialises a share-partition in the background
            fetches.append((t1 - t0) * 1000)
            off = acquired[0].first_offset
            t0 = time.perf_counter()
            a = w.request(ack_req.ShareAcknowledgeRequest(
                group_id=group, member_id=member, share_session_epoch=i32(epoch), is_renew_ack=False,
                topics=(ack_req.AcknowledgeTopic(topic_id=tid, partitions=(ack_req.AcknowledgePartition(
                    partition_index=i32(0), acknowledgement_batches=(ack_req.AcknowledgementBatch(
                        first_offset=i64(off), last_offset=i64(off), acknowledge_types=(i8(1),)),)),)),)))
            acks.append((time.perf_counter() - t0) * 1000)
            if a.error_code != 0:
                raise RuntimeError(f"share acknowledge: {a.error_code}")
            epoch += 1
            got += 1
        w.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=i32(-1), rack_id=None,
                                             subscribed_topic_names=None))
    fetches.sort()
    acks.sort()
    return fetches[len(fetches) // 2], acks[len(acks) // 2]


def consume_shared(bootstrap: str, topic: str, n: int, consumers: int = 3) -> tuple[float, list[int]]:
    """Seconds until three share consumers delivered n records between them, and each one's count."""
    from confluent_kafka import ShareConsumer

    group = f"bench-share-{uuid.uuid4().hex[:8]}"
    set_earliest(bootstrap, group)
    counts = [0] * consumers
    seen: set[int] = set()  # offsets of the one partition
    lock = threading.Lock()
    done = threading.Event()
    errors: list[str] = []
    start = threading.Barrier(consumers + 1)

    def member(i: int) -> None:
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"bench-share-{i}"})
        try:
            start.wait()
            c.subscribe([topic])
            while not done.is_set():
                for m in c.poll(0.2):
                    if m.error() is not None:
                        errors.append(str(m.error()))
                        continue
                    with lock:
                        counts[i] += 1
                        seen.add(m.offset())
                        if len(seen) >= n:
                            done.set()
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{type(exc).__name__}: {exc}")
            done.set()
        finally:
            c.close()

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(consumers)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    finished = done.wait(TIMEOUT)
    secs = time.perf_counter() - t0
    for t in threads:
        t.join(30)
    if errors:
        raise RuntimeError(errors[0])
    if not finished:
        raise TimeoutError(f"{len(seen)} of {n} records within {TIMEOUT}s")
    return secs, counts


def run(brokers: list[str], runs: int, records: int, trips: int) -> Report:
    report = Report("share_groups: ShareFetch/ShareAcknowledge round trip; 3 share consumers on one partition",
                    settings={"runs": runs, "records": records, "round_trips": trips, "value_size": 100})
    fetch_m = report.metric("share_groups", "ShareFetch (1 record) round trip", "ms", False)
    ack_m = report.metric("share_groups", "ShareAcknowledge (1 record) round trip", "ms", False)
    rate_m = report.metric("share_groups", "3 share consumers, 1 partition", "records/s", True)
    with peers.running_in_order(brokers, rate_m) as (running, order):
        for rnd, name in alternate(order, runs):
            bootstrap = running[name].bootstrap
            topic = f"bench-share-{uuid.uuid4().hex[:8]}"
            try:
                peers.create_topic(bootstrap, topic, partitions=1)
                throughput.produce(bootstrap, topic, max(records, trips), 100)
                f, a = round_trips(bootstrap, topic, trips)
                fetch_m.add(name, f)
                ack_m.add(name, a)
                secs, _counts = consume_shared(bootstrap, topic, records)
                rate_m.add(name, records / secs)
            except Exception as exc:  # noqa: BLE001
                rate_m.fail(name, failure(f"round {rnd}", exc))
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = common_parser(__doc__, runs=3, brokers="kafkalite,kafka")
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--round-trips", type=int, default=200)
    args = parser.parse_args(argv)
    apply_common_arguments(args)
    report = run(peers.parse_brokers(args.brokers), args.runs, args.records, args.round_trips)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
