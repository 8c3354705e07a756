"""Helpers of the transaction and exactly-once compatibility tests.

Every client module here offers the same operations, so that a scenario is written once and
run with each client:

- ``run_plan(bootstrap, transactional_id, txns)``: one producer runs the transactions in order;
  each is ``{"records": [[topic, partition, value], ...], "end": "commit" | "abort"}``. Records
  are flushed before the end, so an aborted transaction's records are in the log.
- ``fence(bootstrap, transactional_id, topic)``: producer A opens a transaction and writes;
  producer B with the same transactional.id initializes (fencing A) and commits one record; A
  then tries to write and commit. Returns the name of the error A got.
- ``time_out(bootstrap, transactional_id, topic, timeout_ms, until)``: a producer with
  ``transaction.timeout.ms=timeout_ms`` writes, waits until the file ``until`` exists (the test
  creates it once the broker has aborted the transaction), then commits; returns the error name.
- ``copy(bootstrap, transactional_id, group, source, sink, count)``: a consume-transform-produce
  loop with sendOffsetsToTransaction (consumer group metadata where the client has it);
  copies ``count`` records, each value prefixed with ``copied:``.

Reading back always goes through librdkafka (``rdkafka_txn.read``), the reference reader.
"""

import threading
from pathlib import Path
from types import ModuleType
from typing import Callable


def time_out_while(client: ModuleType, bootstrap: str, transactional_id: str, topic: str, timeout_ms: int,
                   until: Path, watch: Callable[[], None]) -> str:
    """Run `client.time_out` in a thread and `watch()` (the test's checks of the broker's abort)
    meanwhile; then create `until` so that the producer tries to commit, and return the error
    name it got (an exception of the producer thread is raised here)."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(client.time_out(bootstrap, transactional_id, topic, timeout_ms, str(until)))
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            outcome.append(e)

    producer = threading.Thread(target=run)
    producer.start()
    try:
        watch()
    finally:
        until.touch()
        producer.join(120)
    (err,) = outcome
    if isinstance(err, BaseException):
        raise err
    return err
