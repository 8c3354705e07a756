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
