"""The broker's own cost per request: pipelined raw-protocol produce and fetch, a client that is not the ceiling.

bench.perf's Java tools and bench.throughput's librdkafka spend more CPU than the broker on this
2-core machine, so their MB/s rows follow the clients. Here one Python connection sends
prebuilt frames (encoded before the clock starts) and reads the answers without decoding them
until the run is over, so the broker, not the client, bounds the rate. Each round, for each
broker in turn (kafkalite, kafka, tansu, kafkalite, ...):

1. create a fresh topic with ``--partitions`` partitions; InitProducerId (idempotent producer);
2. produce: ``--requests`` Produce requests (acks=all), each one batch of ``--batch-bytes`` of
   ``--value-size``-byte records per partition with the producer's sequences, at most
   ``--window`` in flight (a Java producer's max.in.flight.requests.per.connection). Figures:
   MB/s of record values, and the broker process's CPU (user + system, psutil) per request;
3. fetch: read everything back, every partition up to 1 MiB per request (the Java consumer's
   max.partition.fetch.bytes), in an incremental fetch session (KIP-227) as consumers do.
   Figures: MB/s and broker CPU per MB.

Every response is decoded after the run and any error fails the round. MB = 10^6 value bytes.

    python -m bench.raw_load [--brokers kafkalite,kafka,tansu] [--runs 3] [--partitions 6]
                             [--requests 2000] [--value-size 1024] [--profile DIR]

``--profile DIR``: one extra kafkalite round under py-spy (``DIR/kafkalite-raw-produce.txt``
and ``-fetch.txt``), summarised with the figures.
"""

from __future__ import annotations

import contextlib
import importlib
import struct
import time
import uuid
from pathlib import Path

from bench import peers
from bench.stats import Report, alternate, apply_common_arguments, common_parser, emit, failure
from bench.throughput import _cpu
from kafkalite.protocol.client import WireClient, decode_response
from kafkalite.protocol.messages import make, request_type
from kafkalite.protocol.records import Record, build_batch

PRODUCE_VERSION = 9      # flexible, topics by name: served by kafkalite, Apache Kafka 4.x and Tansu
FETCH_VERSION = 12       # the last version naming topics by name (v13+ use topic ids)
_BATCH_HEAD = struct.Struct(">qi")


def _schema(key: int, version: int):
    return importlib.import_module(request_type(key, version).__module__)


class RoundFailed(RuntimeError):
    pass


def _produce_frames(client: WireClient, topic: str, partitions: int, requests: int, value_size: int,
                    batch_bytes: int) -> tuple[list[bytes], int]:
    """The encoded Produce requests of one idempotent producer, and the records per batch."""
    ip = _schema(22, 4)
    deadline = time.monotonic() + 60
    while True:
        r = client.request(make(ip.InitProducerIdRequest, transactional_id=None, transaction_timeout=60000,
                                producer_id=-1, producer_epoch=-1))
        # Apache Kafka answers COORDINATOR_LOAD_IN_PROGRESS until its transaction log is loaded
        if int(r.error_code) != 14 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if int(r.error_code) != 0:
        raise RoundFailed(f"InitProducerId: {r.error_code!r}")
    producer_id, epoch = int(r.producer_id), int(r.producer_epoch)
    per_batch = max(1, batch_bytes // (value_size + 10))
    pm = _schema(0, PRODUCE_VERSION)
    now = int(time.time() * 1000)
    records = [Record(None, bytes(value_size), (), now)] * per_batch
    seqs = [0] * partitions
    frames = []
    for i in range(requests):
        data = []
        for p in range(partitions):
            batch = build_batch(records, producer_id=producer_id, producer_epoch=epoch, base_sequence=seqs[p],
                                timestamp_ms=now)
            seqs[p] += per_batch
            data.append(make(pm.PartitionProduceData, index=p, records=bytes(batch)))
        req = make(pm.ProduceRequest, transactional_id=None, acks=-1, timeout=30000,
                   topic_data=(make(pm.TopicProduceData, name=topic, partition_data=tuple(data)),))
        frames.append(client.encode(req, 1000 + i))
    return frames, per_batch


def produce(client: WireClient, frames: list[bytes], window: int, pid: int | None) -> tuple[float, float | None]:
    """Send the frames with at most `window` unanswered; (seconds, broker CPU seconds)."""
    answers = []
    cpu0 = _cpu(pid)
    t0 = time.monotonic()
    sent = 0
    while len(answers) < len(frames):
        while sent < len(frames) and sent - len(answers) < window:
            client.send_raw(frames[sent])
            sent += 1
        answers.append(client.recv_frame())
    seconds = time.monotonic() - t0
    cpu1 = _cpu(pid)
    for i, frame in enumerate(answers):
        resp = decode_response(0, PRODUCE_VERSION, frame, 1000 + i)
        for t in resp.responses:
            for p in t.partition_responses:
                if int(p.error_code) != 0:
                    raise RoundFailed(f"produce request {i} partition {p.index}: {p.error_code!r} {p.error_message}")
    return seconds, None if cpu0 is None or cpu1 is None else cpu1 - cpu0


def fetch_all(client: WireClient, topic: str, partitions: int, end: int, pid: int | None) -> tuple[float, float | None, int]:
    """Read every partition to offset `end`; (seconds, broker CPU seconds, fetches)."""
    fm = _schema(1, FETCH_VERSION)
    offsets = [0] * partitions
    session, epoch, fetches = 0, 0, 0
    deadline = time.monotonic() + 120
    cpu0 = _cpu(pid)
    t0 = time.monotonic()
    while min(offsets) < end:
        if time.monotonic() > deadline:
            raise RoundFailed(f"fetch did not reach offset {end} within 120 s: {offsets}")
        # an incremental fetch names only the partitions whose position moved (all, here)
        parts = tuple(make(fm.FetchPartition, partition=p, current_leader_epoch=-1, fetch_offset=offsets[p],
                           last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20)
                      for p in range(partitions) if offsets[p] < end)
        req = make(fm.FetchRequest, replica_id=-1, max_wait=500, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
                   session_id=session, session_epoch=epoch, topics=(make(fm.FetchTopic, topic=topic, partitions=parts),),
                   forgotten_topics_data=(), rack_id="")
        resp = client.request(req)
        fetches += 1
        if int(resp.error_code) != 0:
            raise RoundFailed(f"fetch: {resp.error_code!r}")
        if resp.session_id:
            session, epoch = resp.session_id, epoch + 1
        else:
            session, epoch = 0, 0
        for t in resp.responses:
            for pd in t.partitions:
                if int(pd.error_code) != 0:
                    raise RoundFailed(f"fetch partition {pd.partition_index}: {pd.error_code!r}")
                data = pd.records or b""
                pos = 0
                while pos + 27 <= len(data):
                    base, length = _BATCH_HEAD.unpack_from(data, pos)
                    if pos + 12 + length > len(data):
                        break
                    (last_delta,) = struct.unpack_from(">i", data, pos + 23)
                    offsets[pd.partition_index] = base + last_delta + 1
                    pos += 12 + length
    seconds = time.monotonic() - t0
    cpu1 = _cpu(pid)
    return seconds, None if cpu0 is None or cpu1 is None else cpu1 - cpu0, fetches


def one_round(peer: peers.Peer, partitions: int, requests: int, value_size: int, batch_bytes: int,
              window: int, profile_dir: Path | None = None) -> dict:
    topic = f"bench-raw-{uuid.uuid4().hex[:8]}"
    peers.create_topic(peer.bootstrap, topic, partitions=partitions)
    with WireClient(peer.bootstrap, timeout=60, client_id="bench-raw") as client:
        frames, per_batch = _produce_frames(client, topic, partitions, requests, value_size, batch_bytes)
        mb = requests * partitions * per_batch * value_size / 1e6
        rec = _recorder(peer, profile_dir)
        with rec("produce"):
            p_s, p_cpu = produce(client, frames, window, peer.pid)
        with rec("fetch"):
            f_s, f_cpu, fetches = fetch_all(client, topic, partitions, requests * per_batch, peer.pid)
    return {"produce_mb_s": mb / p_s, "produce_cpu_us": None if p_cpu is None else 1e6 * p_cpu / requests,
            "fetch_mb_s": mb / f_s, "fetch_cpu_ms_per_mb": None if f_cpu is None else 1e3 * f_cpu / mb,
            "fetches": fetches, "per_batch": per_batch}


def _recorder(peer: peers.Peer, profile_dir: Path | None):
    def rec(phase: str):
        if profile_dir is None:
            return contextlib.nullcontext()
        from bench import profile

        profile_dir.mkdir(parents=True, exist_ok=True)
        return profile.record(peer.pid, profile_dir / f"{peer.name}-raw-{phase}.txt", rate=500)
    return rec


def run(brokers: list[str], runs: int, partitions: int, requests: int, value_size: int, batch_bytes: int,
        window: int, profile_dir: str | None = None) -> Report:
    report = Report("raw_load: pipelined raw-protocol produce and fetch", settings={
        "runs": runs, "partitions": partitions, "produce_requests": requests, "value_size": value_size,
        "batch_bytes": batch_bytes, "in_flight": window, "acks": "all", "idempotent": True,
        "produce_version": PRODUCE_VERSION, "fetch_version": FETCH_VERSION,
    })
    name = f"{partitions}p {value_size} B"
    p_mb = report.metric(name, "produce", "MB/s", True)
    p_cpu = report.metric(name, "broker CPU per produce request", "us", False)
    f_mb = report.metric(name, "fetch", "MB/s", True)
    f_cpu = report.metric(name, "broker CPU per fetched MB", "ms", False)
    with peers.running_in_order(brokers, p_mb) as (running, order):
        for rnd, b in alternate(order, runs):
            try:
                r = one_round(running[b], partitions, requests, value_size, batch_bytes, window)
            except Exception as exc:  # noqa: BLE001 - a failed run is reported, not fatal
                p_mb.fail(b, failure(f"round {rnd}", exc)[:200])
                continue
            p_mb.add(b, r["produce_mb_s"])
            f_mb.add(b, r["fetch_mb_s"])
            if r["produce_cpu_us"] is not None:
                p_cpu.add(b, r["produce_cpu_us"])
                f_cpu.add(b, r["fetch_cpu_ms_per_mb"])
        if profile_dir and "kafkalite" in running:
            from bench import profile

            out = Path(profile_dir)
            one_round(running["kafkalite"], partitions, requests, value_size, batch_bytes, window, out)
            for phase in ("produce", "fetch"):
                f = out / f"kafkalite-raw-{phase}.txt"
                report.notes.append(profile.summarize(f).render(25, title=f"py-spy kafkalite {phase}; {f}"))
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = common_parser(__doc__, runs=3, brokers="kafkalite,kafka,tansu")
    parser.add_argument("--partitions", type=int, default=6, help="partitions of the topic (default 6)")
    parser.add_argument("--requests", type=int, default=2000, help="Produce requests per round (default 2000)")
    parser.add_argument("--value-size", type=int, default=1024, help="bytes per record value (default 1024)")
    parser.add_argument("--batch-bytes", type=int, default=16384,
                        help="batch size per partition per request (default 16384, the Java producer's batch.size)")
    parser.add_argument("--window", type=int, default=5, help="Produce requests in flight (default 5)")
    parser.add_argument("--profile", metavar="DIR", help="profile one extra kafkalite round with py-spy")
    args = parser.parse_args(argv)
    apply_common_arguments(args)
    report = run(peers.parse_brokers(args.brokers), args.runs, args.partitions, args.requests, args.value_size,
                 args.batch_bytes, args.window, args.profile)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
