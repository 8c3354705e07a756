"""The cluster: its topics and partitions, where they live on disk, and who leads them.

Rules:
- Topic metadata persists in the topics store (broker.topic_store), rewritten on every change;
  each partition's log is the directory `<data dir>/<topic>-<partition>` as in Kafka, opened
  here and then reached only through its `Partition` (broker.partition).
- All or nothing: a change of the topics (creating or deleting one, adding partitions, its
  configs, its replica lists) is written to topics.json as the cluster will be before memory
  changes; a write that fails (a full or failing disk) raises OSError with memory as it was, and
  the caller answers KAFKA_STORAGE_ERROR. A topic whose save fails is dropped whole: no partial
  topic is served or stored. A new partition's directory is made by its first write
  (storage.log), and its storage opens on first use as a loaded one's (an internal topic's at
  once, for its coordinator), so creating one costs its objects and no file system call, and
  topics.json is written once per CreateTopics, re-encoding only the topics that changed.
- A partition opened is replayed into its producer state (broker.producer_replay) before it
  serves.
- A start answers before it opens the partitions it loads, on a cluster of one node: each opens
  on first use or in the background pass after the broker answers (`not_yet_open`), whichever
  comes first (broker.partition's rules), so the time to the first answer does not grow with
  the partition count. On more nodes they open before it answers, as the leader epoch that
  Metadata shows is read from the log.

The cluster has `nodes` node ids (node.id, node.id + 1, ...) served by one process over one
copy of the data: replicas are logical. Each partition has a replica list (Kafka's rack-unaware
placement, broker.placement), an in-sync replica set, a leader (-1: none) and a leader epoch
that grows with every leader change. Leaders, ISR and epochs live in memory: a restart starts
every partition over at its preferred leader with the full ISR.
"""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from kafkalite.protocol.batch import BatchHeader
from kafkalite.storage import LogConfig, PartitionLog
from kafkalite.storage.open_files import OPEN_FILES

from .changes import StateChanges
from .clock import now_ms
from .internal_topics import INTERNAL_TOPICS
from .partition import Partition, Topic
from .placement import assign_replicas, topic_seed
from .produce_validation import ProducePolicy
from .producer_replay import replay_producer_state
from .settings.broker_config import BrokerConfig
from .topic_store import StoredTopic, load_topics, save_topic_lines, topic_line

log = logging.getLogger("kafkalite.cluster")

MAX_TOPIC_NAME = 249


def topic_name_error(name: str | None) -> str | None:
    """Kafka's Topic.validate, with its messages: the reason a topic name is illegal, or None. The
    one owner of the rule (CreateTopics, configs, Metadata's auto-creation, streams groups' internal
    topics, --seed)."""
    if name is None or name == "":
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_TOPIC_NAME:
        return (f"Topic name is invalid: the length of '{name}' is longer than the max allowed length "
                f"{MAX_TOPIC_NAME}")
    if not all(c.isascii() and (c.isalnum() or c in "._-") for c in name):
        return (f"Topic name is invalid: '{name}' contains one or more characters other than "
                "ASCII alphanumerics, '.', '_' and '-'")
    return None


@dataclass(frozen=True, slots=True)
class _StoredLine:
    """A topic's line of topics.json and the objects it was made from. Every CreateTopics rewrites
    the whole file (all or nothing), and encoding every topic anew made a request's cost grow with
    the topics there were: a topic whose configs and replica lists are the same objects as at the
    last save keeps its line. Configs and replica lists are replaced, never changed in place, and
    held here, so an object seen again is the one the line was made from."""

    configs: dict[str, str]
    replicas: tuple[list[int], ...]
    text: str

    def holds(self, configs: dict[str, str], replicas: list[list[int]]) -> bool:
        return (configs is self.configs and len(replicas) == len(self.replicas)
                and all(a is b for a, b in zip(replicas, self.replicas)))


class Cluster:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.node_id = config.int_of("node.id")
        # every node id this process serves; node_id (the first) is the controller
        self.node_ids: list[int] = [self.node_id + i for i in range(max(1, config.int_of("nodes")))]
        # nodes taken down (their ports refuse connections)
        self.down: set[int] = set()
        self.cluster_id = config.str_of("cluster.id")
        self.data_dir = Path(config.data_dir)
        OPEN_FILES.set_limit(config.int_of("log.segment.open.files.max"))
        self.meta_dir = self.data_dir / "__cluster_metadata"
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        # appends, markers and handled requests, which the controls' waits sleep on
        self.changes = StateChanges()
        # each topic's line of topics.json as the last save wrote it (`save`)
        self._stored_lines: dict[uuid.UUID, _StoredLine] = {}

    # --- persistence ---------------------------------------------------------------------
    def load(self) -> None:
        later = len(self.node_ids) == 1
        for entry in load_topics(self.meta_dir):
            topic = Topic(entry["name"], uuid.UUID(entry["id"]), dict(entry["configs"]))
            self._attach(topic)
            replicas = self._stored_replicas(entry)
            config = None if later else self.log_config(topic)
            for i in range(entry["partitions"]):
                self._add_partition(topic, i, replicas[i], open_now=not later, config=config)

    def not_yet_open(self) -> list[Partition]:
        """The partitions `load` left to open on first use (broker.server's background pass
        opens them after the start)."""
        return [part for part in self.all_partitions() if not part.opened]

    def _stored_replicas(self, entry: StoredTopic) -> list[list[int]]:
        """The replica lists saved with a topic, or (saved by an older kafkalite or for other
        node ids) the placement of its replication factor, capped at the nodes there are now."""
        stored = entry.get("replicas")
        n = entry["partitions"]
        nodes = set(self.node_ids)
        if stored and len(stored) == n and all(r and set(r) <= nodes for r in stored):
            return [list(r) for r in stored]
        rf = min(len(stored[0]) if stored and stored[0] else 1, len(self.node_ids))
        return self.placement(entry["name"], n, rf)

    def placement(self, topic: str, partitions: int, replication_factor: int) -> list[list[int]]:
        """Kafka's rack-unaware assignment over this cluster's nodes (raises PlacementError)."""
        if len(self.node_ids) == 1 and replication_factor == 1:
            return [[self.node_id]] * partitions
        return assign_replicas(partitions, replication_factor, self.node_ids,
                               start_index=topic_seed(topic, len(self.node_ids)))

    def default_replication_factor(self, name: str) -> int:
        """Internal topics get min(nodes, 3), as Kafka's offsets.topic.replication.factor and
        transaction.state.log.replication.factor defaults of 3 would on a cluster of that size;
        other topics default.replication.factor."""
        if name in INTERNAL_TOPICS:
            return min(len(self.node_ids), 3)
        return self.config.int_of("default.replication.factor")

    def save(self, *, fsync: bool = True, without: Iterable[Topic] = (), changed: Topic | None = None,
             configs: dict[str, str] | None = None, replicas: list[list[int]] | None = None) -> None:
        """Write topics.json as the cluster will be once a change is made, before memory is changed
        (the all-or-nothing rule at the top): the topics in memory, less `without`, with
        `changed`'s configs and replica lists replaced by `configs` and `replicas` where given."""
        gone = {id(t) for t in without}
        lines: list[str] = []
        made: dict[uuid.UUID, _StoredLine] = {}
        for t in self.topics.values():
            if id(t) in gone:
                continue
            mine = t is changed
            lists = replicas if mine and replicas is not None else [p.replicas for p in t.partitions]
            topic_configs = configs if mine and configs is not None else t.configs
            line = self._stored_lines.get(t.topic_id)
            if line is None or not line.holds(topic_configs, lists):
                line = _StoredLine(topic_configs, tuple(lists), topic_line(
                    {"name": t.name, "id": str(t.topic_id), "partitions": len(lists), "configs": topic_configs,
                     "replicas": lists}))
            made[t.topic_id] = line
            lines.append(line.text)
        save_topic_lines(self.meta_dir, lines, fsync=fsync)
        self._stored_lines = made

    def replicas_with(self, part: Partition, replicas: list[int]) -> list[list[int]]:
        """The replica lists of `part`'s topic with `part`'s replaced (for `save`)."""
        return [list(replicas) if p is part else p.replicas for p in part.topic.partitions]

    # --- topics ----------------------------------------------------------------------------
    def log_config(self, topic: Topic) -> LogConfig:
        from .settings.topic_keys import topic_config_default

        eff = self.effective_configs(topic)

        def value(key: str) -> Any:
            # the keys kafkalite's broker settings do not default (Kafka's topic default then)
            return eff.get(key) if eff.get(key) is not None else topic_config_default(key)

        config = LogConfig(
            # internal.segment.bytes (Kafka's test-only override) wins over segment.bytes
            segment_bytes=int(eff.get("internal.segment.bytes") or eff["segment.bytes"]),
            segment_ms=int(eff["segment.ms"]),
            retention_ms=int(eff["retention.ms"]),
            retention_bytes=int(eff["retention.bytes"]),
            index_interval_bytes=int(eff["index.interval.bytes"]),
            cleanup_policy=str(eff["cleanup.policy"]),
            delete_retention_ms=int(value("delete.retention.ms")),
            min_cleanable_dirty_ratio=float(value("min.cleanable.dirty.ratio")),
            min_compaction_lag_ms=int(value("min.compaction.lag.ms")),
            max_compaction_lag_ms=int(value("max.compaction.lag.ms")),
            timestamp_type=str(eff["message.timestamp.type"]),
            fsync=self.config.str_of("fsync"),
        )
        shared = topic.shared_log_config
        if shared is not None and shared == config:
            return shared
        topic.shared_log_config = config
        return config

    def effective_configs(self, topic: Topic) -> dict[str, Any]:
        eff = self.config.topic_defaults()
        eff.update(topic.configs)
        return eff

    def produce_policy(self, topic: Topic) -> ProducePolicy:
        return ProducePolicy.from_configs(self.effective_configs(topic))

    def _attach(self, topic: Topic) -> None:
        topic.policy = self.produce_policy(topic)
        self.topics[topic.name] = topic
        self.topics_by_id[topic.topic_id] = topic

    def _detach(self, topic: Topic) -> None:
        if self.topics.get(topic.name) is topic:
            del self.topics[topic.name]
            del self.topics_by_id[topic.topic_id]

    def _add_partition(self, topic: Topic, index: int, replicas: list[int], *, open_now: bool,
                       config: LogConfig | None = None) -> None:
        """A partition of `topic`, its storage opened now or on first use (broker.partition's
        rules); `config`: its topic's log config, when the caller opens many now (one opened later
        reads it when it opens)."""
        opener = self._open_storage if config is None else (lambda p: self._open_storage(p, config))
        part = Partition(topic, index, None, list(replicas), self.changes, opener=opener)
        if open_now:
            part.open_now()
        topic.partitions.append(part)

    def _new_partition(self, topic: Topic, index: int, replicas: list[int]) -> None:
        """A partition just created (CreateTopics, CreatePartitions): its storage opens on first use,
        as a loaded one's (it has nothing on disk to open: its first write makes its directory), so
        creating one costs its objects alone; an internal topic's opens at once, for its coordinator."""
        self._add_partition(topic, index, replicas, open_now=topic.internal)

    def _open_storage(self, part: Partition, config: LogConfig | None = None) -> None:
        """A partition's opener (broker.partition): its log, its leader epoch and its producer
        state (none to replay in a new log, whose directory is not made yet)."""
        # a string: a Path per partition costs more than the listing that finds no directory
        directory = os.path.join(self.data_dir, partition_dir_name(part.topic.name, part.index))
        plog = PartitionLog.open(directory, config or self.log_config(part.topic), now_ms=now_ms())
        part.attach_storage(plog)
        if (len(self.node_ids) > 1 or part.topic.name in INTERNAL_TOPICS) and plog.log_end_offset > plog.log_start_offset:
            # leaders moved in an earlier run: go on from the last epoch the log holds, so that
            # no client that saw it is shown an older one (clients ignore metadata that goes back);
            # on one node too for the internal topics, whose leader epoch is their coordinator's
            # epoch (markers of an older one are fenced by the partitions that saw a newer)
            for _base, batch in plog.batches_from(plog.log_end_offset - 1):
                part.leader_epoch = max(part.leader_epoch, BatchHeader(batch, 0).partition_leader_epoch)
            if part.leader_epoch:
                part.epoch_starts.append((part.leader_epoch, plog.log_end_offset))
        if not plog.created:
            replay_producer_state(part)

    def create_topic(self, name: str, num_partitions: int, configs: dict[str, str] | None = None, *,
                     replication_factor: int | None = None, assignment: list[list[int]] | None = None,
                     persist: bool = True) -> Topic:
        """Creates a topic with the given replica lists, or placed by Kafka's rule with the given
        replication factor (default_replication_factor when None). Raises PlacementError when
        the replication factor exceeds the nodes. Without `persist`, topics.json is not written:
        the caller creating several topics saves once afterwards (`save_created`)."""
        if assignment is None:
            rf = self.default_replication_factor(name) if replication_factor is None else replication_factor
            assignment = self.placement(name, num_partitions, rf)
        topic = Topic(name, uuid.uuid4(), dict(configs or {}))
        try:
            for i in range(num_partitions):
                self._new_partition(topic, i, assignment[i])
            self._attach(topic)
            if persist:
                self.save()
        except OSError:
            self._discard([topic])
            raise
        log.info("created topic %s with %d partition(s) id=%s", name, num_partitions, topic.topic_id)
        return topic

    def save_created(self, topics: list[Topic]) -> None:
        """One write of topics.json for topics created without `persist`; when it fails they are
        discarded (and the OSError raised), as create_topic discards a topic it cannot save."""
        try:
            self.save()
        except OSError:
            self._discard(topics)
            raise

    def _discard(self, topics: list[Topic]) -> None:
        """All or nothing (a full or failing disk): a topic missing partitions, or missing from
        topics.json and so gone after a restart, is never served; its partition directories go
        (delete writes nothing), and the same request made again creates it whole."""
        for topic in topics:
            self._detach(topic)
            for part in topic.partitions:
                part.delete()

    def add_partitions(self, topic: Topic, total: int, assignment: list[list[int]] | None = None) -> None:
        """New partitions up to `total`, with the given replica lists for the new ones, or placed
        as the topic's first partitions were (same replication factor)."""
        first = len(topic.partitions)
        if assignment is None:
            rf = len(topic.partitions[0].replicas) if topic.partitions else 1
            assignment = self.placement(topic.name, total, rf)[first:]
        try:
            for i in range(first, total):
                self._new_partition(topic, i, assignment[i - first])
            self.save()
        except OSError:
            # all or nothing, as create_topic: the new partitions go, with any directory made
            for part in topic.partitions[first:]:
                part.delete()
            del topic.partitions[first:]
            raise

    def delete_topic(self, topic: Topic) -> None:
        self.delete_topics([topic])

    def delete_topics(self, topics: list[Topic], *, trash: Path | None = None, fsync: bool = True) -> None:
        """Delete topics with one write of topics.json (the reset control deletes them all);
        with `trash`, their partition directories are moved there for the caller to remove;
        without `fsync`, topics.json is not fsynced (the restore control replaces it at once)."""
        if not topics:
            return
        self.save(fsync=fsync, without=topics)
        for topic in topics:
            del self.topics[topic.name]
            del self.topics_by_id[topic.topic_id]
        for topic in topics:
            for part in topic.partitions:
                part.wake()
                part.delete(trash=trash)
            log.info("deleted topic %s", topic.name)

    def alter_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        self.save(changed=topic, configs=dict(configs))
        topic.configs = dict(configs)
        self._reconfigure(topic)

    def apply_broker_defaults(self) -> None:
        """The broker's topic defaults changed (dynamic broker configs, set or read at start): every
        topic takes its effective configs again, its own values still winning, as Kafka's
        DynamicLogConfig reconfigures every log."""
        for topic in self.topics.values():
            self._reconfigure(topic)

    def _reconfigure(self, topic: Topic) -> None:
        """The topic's produce policy and its partitions' log config, from its effective configs."""
        topic.policy = self.produce_policy(topic)
        config = self.log_config(topic)
        for part in topic.partitions:
            part.update_config(config)

    def partition(self, topic_name: str, index: int) -> Partition | None:
        topic = self.topics.get(topic_name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def alive(self, node: int) -> bool:
        return node in self.node_ids and node not in self.down

    # --- topology: what Kafka's controller does when leaders move and nodes come and go --------
    def move_leader(self, part: Partition, node: int) -> None:
        """Make `node` the partition's leader (a new leader epoch). A node that is not a replica
        takes the current leader's place in the replica list (a reassignment and election in one);
        the new leader is in the ISR (logical replicas are always caught up)."""
        if node not in part.replicas:
            old = part.leader if part.leader in part.replicas else part.replicas[0]
            replicas = [node if n == old else n for n in part.replicas]
            self.save(changed=part.topic, replicas=self.replicas_with(part, replicas))
            part.replicas = replicas
            part.isr = [n for n in part.isr if n != old]
        if node not in part.isr:
            part.isr.append(node)
        if part.leader != node:
            part.set_leader(node)

    def take_node_down(self, node: int) -> list[Partition]:
        """The controller's answer to a node leaving: it leaves every ISR it is in (unless it is
        the last member, which Kafka keeps), and each partition it led moves to the first other
        in-sync replica that is up, or has no leader (-1) when none is left. Returns the
        partitions whose leader changed."""
        self.down.add(node)
        moved = []
        for part in self.all_partitions():
            if node not in part.replicas:
                continue
            if node in part.isr and len(part.isr) > 1:
                part.isr.remove(node)
            if part.leader == node:
                successor = next((n for n in part.replicas if n in part.isr and self.alive(n)), -1)
                part.set_leader(successor)
                moved.append(part)
        return moved

    def bring_node_up(self, node: int) -> list[Partition]:
        """A node returns: it rejoins the ISR of its partitions at once (nothing to catch up), and
        leaderless partitions it is in sync for elect it. Partitions led elsewhere stay there
        (Kafka moves them back only with a preferred leader election). Returns the partitions
        whose leader changed."""
        self.down.discard(node)
        moved = []
        for part in self.all_partitions():
            if node not in part.replicas:
                continue
            if part.leader < 0 and node in part.isr:
                part.set_leader(node)
                moved.append(part)
            elif node not in part.isr and part.leader >= 0:
                part.isr.append(node)
        return moved

    def all_partitions(self) -> Iterable[Partition]:
        for topic in self.topics.values():
            yield from topic.partitions

    def write_producer_snapshots(self) -> None:
        """Producer state snapshots of every partition (at shutdown): the next start replays only
        what is appended after them (replay_producer_state)."""
        for part in list(self.all_partitions()):
            try:
                part.write_producer_snapshot()
            except Exception:
                log.exception("cannot write the producer snapshot of %s-%d", part.topic.name, part.index)

    def close(self) -> None:
        for part in self.all_partitions():
            part.close()


def partition_dir_name(topic_name: str, index: int) -> str:
    """The name of a partition's directory in the data dir, Kafka's `<topic>-<partition>`."""
    return f"{topic_name}-{index}"
