"""What the schema registry answers in, and what Confluent's Avro serializer costs a producer.

One kafkalite broker started with ``--schema-registry 0``:

- ``register``: latency of ``POST /subjects/{s}/versions`` with a new Avro schema each time (a
  write to ``_schemas`` with fsync as configured, plus the compatibility check against the
  subject's latest version);
- ``lookup``: latency of ``POST /subjects/{s}`` (is this schema registered, under which version);
- ``id fetch``: latency of ``GET /schemas/ids/{id}`` (what a deserializer asks once per id);
  each over one kept-alive HTTP connection, as a client's pool does;
- ``produce``: records/s of confluent-kafka producing Avro records through ``AvroSerializer``
  (auto-registering once, then cached) inside the timed loop, against the same loop writing a
  pre-built value of the same size (``plain``, the reference of the ratio); bench.throughput's
  settings otherwise (one partition, acks=all, idempotent, linger.ms=5).

Rounds alternate plain and Avro.

    python -m bench.schema_registry [--requests 200] [--records 100000] [--runs 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import http.client
import json
import time
import uuid

from bench.stats import OURS, Report, emit
from bench.throughput import produce_waiting, producer_config

AVRO = "kafkalite+AvroSerializer"


def _schema(i: int) -> str:
    fields = [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]
    fields += [{"name": f"extra{j}", "type": "int", "default": 0} for j in range(i)]
    return json.dumps({"type": "record", "name": "Row", "fields": fields})


def _latencies(url: str, requests: int) -> dict[str, list[float]]:
    host, port = url.split("//", 1)[1].rstrip("/").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
    subject = f"bench-{uuid.uuid4().hex[:8]}"

    def call(method: str, path: str, body: dict | None = None) -> tuple[float, dict]:
        t0 = time.perf_counter()
        conn.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = conn.getresponse()
        data = json.loads(response.read())
        elapsed = time.perf_counter() - t0
        if response.status != 200:
            raise RuntimeError(f"{method} {path}: {response.status} {data}")
        return elapsed, data

    out: dict[str, list[float]] = {"register": [], "lookup": [], "id fetch": []}
    ids = []
    for i in range(requests):
        elapsed, data = call("POST", f"/subjects/{subject}/versions", {"schema": _schema(i)})
        out["register"].append(elapsed)
        ids.append(data["id"])
    for i in range(requests):
        out["lookup"].append(call("POST", f"/subjects/{subject}", {"schema": _schema(i)})[0])
    for schema_id in ids:
        out["id fetch"].append(call("GET", f"/schemas/ids/{schema_id}")[0])
    conn.close()
    return out


def _produce(bootstrap: str, records: int, value_of) -> float:
    """records/s of one confluent-kafka producer (bench.throughput's settings) writing
    `value_of(i)` for i in range(records), from the first produce() until flush() returns."""
    from confluent_kafka import Producer

    topic = f"sr-{uuid.uuid4().hex[:8]}"
    producer = Producer(producer_config(bootstrap, records, 5))
    producer.list_topics(topic, timeout=30)
    value_of(0)  # the serializer registers its schema before the clock starts
    t0 = time.perf_counter()
    deadline = time.monotonic() + 600
    for i in range(records):
        produce_waiting(producer, topic, value_of(i), deadline)
        if i % 1000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    elapsed = time.perf_counter() - t0
    if left:
        raise TimeoutError(f"{left} records not acknowledged")
    return records / elapsed


def _avro_values(url: str, topic: str = "sr-bench"):
    """value_of for the Avro serializer, and the size of one serialized row."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    serializer = AvroSerializer(SchemaRegistryClient({"url": url}), _schema(0))
    ctx = SerializationContext(topic, MessageField.VALUE)
    name = "n" * 40
    return (lambda i: serializer({"id": i, "name": name}, ctx)), len(serializer({"id": 0, "name": name}, ctx))


def run(runs: int, requests: int, records: int) -> Report:
    import kafkalite

    report = Report("schema registry: request latency, and produce with confluent-kafka's AvroSerializer",
                    settings={"requests": requests, "records": records, "runs": runs})
    latency = {name: report.metric("schema_registry", f"{name} latency (median of {requests})", "ms", False)
               for name in ("register", "lookup", "id fetch")}
    rate = report.metric("schema_registry", "produce", "records/s", True)
    with kafkalite.running(schema_registry=0) as broker:
        url = broker.schema_registry_url
        for rnd in range(runs):
            for name, values in _latencies(url, requests).items():
                values.sort()
                latency[name].add(OURS, values[len(values) // 2] * 1000)
            avro_value, size = _avro_values(url)
            plain = b"v" * size
            for label in ([OURS, AVRO] if rnd % 2 == 0 else [AVRO, OURS]):
                value_of = avro_value if label == AVRO else (lambda _i, value=plain: value)
                rate.add(label, _produce(broker.bootstrap, records, value_of))
    report.notes.append("produce: the Avro row's ratio is plain's median over Avro's; both values have the "
                        "same size (the 5-byte prefix and the Avro body against as many plain bytes)")
    return report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.schema_registry", description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    emit(run(args.runs, args.requests, args.records), args.json)


if __name__ == "__main__":
    main()
