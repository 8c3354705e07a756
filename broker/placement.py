"""Replica placement for a cluster of several logical nodes: Kafka's rack-unaware assignment
(AdminUtils.assignReplicasToBrokersRackUnaware).

The first replica of partition p goes to broker (p + start) % n; the others follow it at a
shift of 1 + (shift + j) % (n - 1), and the shift grows by one each time the partition id
wraps around the broker list, so that the followers of consecutive rounds differ. Kafka draws
`start` and `shift` at random per topic; kafkalite derives them from the topic name, so that a
topic lands on the same nodes in every run (and the same placement is recomputed identically).
The first replica is the preferred leader."""

from __future__ import annotations

import zlib


class PlacementError(ValueError):
    """The replication factor cannot be met (Kafka's InvalidReplicationFactorException)."""


def replication_error_text(replication_factor: int, brokers: int) -> str:
    return (f"Unable to replicate the partition {replication_factor} time(s): The target replication "
            f"factor of {replication_factor} cannot be reached because only {brokers} broker(s) are registered "
            "or some brokers have all their log directories cordoned.")


def topic_seed(topic: str, brokers: int) -> int:
    """The per-topic start index Kafka would draw at random, fixed by the topic name."""
    return zlib.crc32(topic.encode()) % brokers if brokers else 0


def assign_replicas(n_partitions: int, replication_factor: int, brokers: list[int], *,
                    start_index: int) -> list[list[int]]:
    """Replica lists for partitions 0 .. n_partitions - 1 (partitions added later take their
    entries from a longer list, so existing partitions keep theirs)."""
    n = len(brokers)
    if replication_factor <= 0:
        raise PlacementError(f"Unable to replicate the partition {replication_factor} time(s): Invalid "
                             f"replication factor {replication_factor}: the replication factor must be positive.")
    if replication_factor > n:
        raise PlacementError(replication_error_text(replication_factor, n))
    out = []
    shift = start_index
    current = 0
    for _ in range(n_partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start_index) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[_replica_index(first, shift, j, n)])
        out.append(replicas)
        current += 1
    return out


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n
