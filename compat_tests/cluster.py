"""A cluster of three nodes of the kind the suite runs on: kafkalite with ``--nodes 3``, or three
Apache Kafka 4.4 processes on loopback (node 1 broker and controller, nodes 2 and 3 brokers;
one KRaft voter, formatted with one cluster id). Internal topics get three partitions and
replication factor 3 on both. ``nodes`` maps node id -> "host:port"; ``bootstrap`` is node 1.

Three JVMs take a minute or more to start on a loaded two-core machine, so only the tests that
need several nodes start one."""

from __future__ import annotations

import base64
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

from compat_tests import brokers

COMMON = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"}
KAFKA_ONLY = {"offsets.topic.replication.factor": "3", "transaction.state.log.replication.factor": "3",
              "transaction.state.log.min.isr": "2", "auto.create.topics.enable": "false"}


def _kafka_node_class():
    from compat_tests import reference

    class KafkaNode(reference.ReferenceBroker):
        """One node of a several-node Apache Kafka: a shared cluster id and one controller."""

        def __init__(self, data_dir: Path, config: dict[str, str], cluster_id: str, voters: str | None):
            super().__init__(data_dir, config)
            self.cluster_id = cluster_id
            self.voters = voters

        def _properties(self) -> dict[str, str]:
            props = super()._properties()
            if self.voters is not None:  # a broker-only node: no controller listener of its own
                props["listeners"] = f"PLAINTEXT://{reference.HOST}:{self.port}"
                props["controller.quorum.voters"] = self.voters
            return props

        def _format(self, props: Path) -> None:
            if (self.log_dir / "meta.properties").exists():
                return
            out = subprocess.run(self._command("kafka.tools.StorageTool", "format", f"--cluster-id={self.cluster_id}",
                                               "-c", str(props), "--ignore-formatted"),
                                 capture_output=True, text=True, timeout=120)
            if out.returncode != 0:
                raise RuntimeError(f"kafka-storage format failed: {out.stdout}\n{out.stderr}")

    return KafkaNode


class Cluster:
    def __init__(self, data_dir: Path, size: int = 3, timeout: float = 300.0, *, kafka: bool | None = None,
                 config: dict[str, str] | None = None):
        """`kafka`: Apache Kafka (True) or kafkalite (False); by default the broker the suite runs on.
        `config`: broker settings (Kafka's keys) for every node of either kind."""
        common = {**COMMON, **(config or {})}
        self._closers: list[Any] = []
        if not (brokers.on_kafka() if kafka is None else kafka):
            from kafkalite.tests import suite_brokers

            b = suite_brokers.start(data_dir=data_dir, nodes=size, config=common)
            self._closers.append(b)
            self.nodes: dict[int, str] = dict(b.nodes)
            return
        node_class = _kafka_node_class()
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        first = node_class(data_dir / "n1", {**common, **KAFKA_ONLY}, cluster_id, None)
        first.prepare()
        voters = f"1@127.0.0.1:{first.controller_port}"
        members = [first] + [
            node_class(data_dir / f"n{i}", {**common, **KAFKA_ONLY, "node.id": str(i), "process.roles": "broker"},
                       cluster_id, voters)
            for i in range(2, size + 1)]
        self._closers.extend(members)
        errors: list[BaseException] = []

        def start(node) -> None:
            try:
                node.start(timeout)
            except BaseException as exc:  # noqa: BLE001 - raised below, in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(n,)) for n in members]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.close()
            raise errors[0]
        self.nodes = {i + 1: n.bootstrap for i, n in enumerate(members)}

    @property
    def bootstrap(self) -> str:
        return self.nodes[1]

    def close(self) -> None:
        # brokers before the controller: a broker stops cleanly only while the controller answers
        for c in reversed(self._closers):
            c.close()

