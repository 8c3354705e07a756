"""What Kafka's answer to an auto-created topic costs a typical test: a confluent-kafka (librdkafka)
producer made, one record produced to a topic that does not exist yet, flushed, against kafkalite
answering as Kafka 4.4 does (the Metadata that creates the topic says UNKNOWN_TOPIC_OR_PARTITION,
the default) and with ``auto.create.topics.instant=true`` (the topic answered at once).

Each run uses a new topic name on the same two brokers; runs alternate (Kafka's answer, instant),
after one unmeasured warm-up of each. The figure is the wall time from making the producer to
flush() returning with the record delivered.

    python -m bench.auto_create [--runs 15] [--json out.json]
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import kafkalite
from bench.stats import Report, alternate, main_with_runs

AS_KAFKA = "kafkalite (as Kafka: UNKNOWN_TOPIC_OR_PARTITION first)"
INSTANT = "kafkalite (auto.create.topics.instant=true)"


def produce_to_a_new_topic(bootstrap: str) -> float:
    from confluent_kafka import Producer

    delivered: list[Any] = []
    t0 = time.monotonic()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    producer.produce(f"auto-{uuid.uuid4().hex[:8]}", b"v", on_delivery=lambda err, msg: delivered.append(err))
    left = producer.flush(30)
    elapsed = time.monotonic() - t0
    if left or delivered != [None]:
        raise RuntimeError(f"not delivered: {left} left, {delivered}")
    return elapsed


def run(runs: int) -> Report:
    import confluent_kafka

    report = Report("a record produced to an auto-created topic (confluent-kafka, from a new producer to flush)",
                    settings={"runs": runs, "librdkafka": confluent_kafka.libversion()[0]})
    metric = report.metric("auto_create", "new producer, produce, flush", "ms", higher_is_better=False)
    with kafkalite.running() as as_kafka, kafkalite.running(config={"auto.create.topics.instant": True}) as instant:
        where = {AS_KAFKA: as_kafka.bootstrap, INSTANT: instant.bootstrap}
        for bootstrap in where.values():
            produce_to_a_new_topic(bootstrap)
        for _, which in alternate([AS_KAFKA, INSTANT], runs):
            try:
                metric.add(which, produce_to_a_new_topic(where[which]) * 1000.0)
            except RuntimeError as exc:
                metric.fail(which, str(exc))
    return report


def main(argv: list[str] | None = None) -> Report:
    return main_with_runs(__doc__, run, argv, runs=15)


if __name__ == "__main__":
    main()
