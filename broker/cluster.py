"""Topics and partitions of the cluster, and where they live on disk.

Topic metadata (name, stable topic id, partition count, config overrides, replica lists) is
kept in `<data dir>/__cluster_metadata/topics.json`, rewritten atomically on every change;
each partition's log is the directory `<data dir>/<topic>-<partition>` as in Kafka.

The cluster has `nodes` node ids (node.id, node.id + 1, ...) served by one process over one
copy of the data: replicas are logical. Each partition has a replica list (Kafka's rack-unaware
placement, broker.placement), an in-sync replica set, a leader (-1: none) and a leader epoch
that grows with every leader change. Leaders, ISR and epochs live in memory: a restart starts
every partition over at its preferred leader with the full ISR.
"""

from __future__ import annotations

import enum
import errno
import json
import logging
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, NamedTuple

import trio
from kio.schema.errors import ErrorCode

from kafkalite.protocol.records import BatchHeader, build_control_batch, parse_control_record
from kafkalite.storage import LogConfig, PartitionLog
from kafkalite.storage.open_files import OPEN_FILES

from .clock import now_ms
from .config import BROKER_KEYS, BrokerConfig
from .internal_topics import INTERNAL_TOPICS
from .placement import assign_replicas, topic_seed
from .producers import ProduceError, ProducerStates

log = logging.getLogger("kafkalite.cluster")

LEGAL_TOPIC_CHARS = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249


def validate_topic_name(name: str) -> str | None:
    """Kafka's Topic.validate: returns a reason, or None when the name is legal."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return "topic name cannot be '.' or '..'"
    if len(name) > MAX_TOPIC_NAME:
        return f"topic name is longer than {MAX_TOPIC_NAME} characters"
    if not LEGAL_TOPIC_CHARS.match(name):
        return "topic name may contain only ASCII alphanumerics, '.', '_' and '-'"
    return None


class AppendOrigin(enum.Enum):
    """Who writes a batch (Kafka's AppendOrigin): a client's batches follow the sequence and
    transaction rules of the producer state; the coordinators' own batches (group metadata,
    transactional offsets, transaction state) carry no sequences and skip those checks."""

    CLIENT = "client"
    COORDINATOR = "coordinator"


class Appended(NamedTuple):
    """What an append tells its caller (the fields of a Produce partition response)."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 with CreateTime; for a duplicate, the timestamp kept for its batch
    log_start_offset: int
    duplicate: bool = False  # a repeat of one of the producer's last five batches: not written again


class Partition:
    """One partition: its log, its producer state, and the fetches waiting for new data.

    Every write goes through `append` (data batches) or `append_marker` (COMMIT/ABORT), which
    check and update the producer state, keep the open transaction's first offset (and with
    it the last stable offset), apply the fsync policy and wake waiting fetches, in that order
    and without an await, so each write is atomic on the trio loop."""

    def __init__(self, topic: "Topic", index: int, plog: PartitionLog, replicas: list[int] | None = None):
        self.topic = topic
        self.index = index
        self.log = plog
        self.producers = ProducerStates()
        self.leader_epoch = 0
        # logical replicas: the first is the preferred leader (default: the default node id alone)
        self.replicas = replicas if replicas is not None else [BROKER_KEYS["node.id"].default]
        self.isr = list(self.replicas)
        self.leader = self.replicas[0]
        # (leader epoch, its start offset) for every epoch after the first, in order
        # (OffsetForLeaderEpoch); epoch 0 began at the log start offset
        self.epoch_starts: list[tuple[int, int]] = []
        self._waiters: set[trio.Event] = set()

    def set_leader(self, node: int) -> None:
        """A new leader (or -1, none): the leader epoch grows by one, as Kafka's controller bumps it
        on every leader change; batches appended from now on carry the new epoch."""
        self.leader = node
        self.leader_epoch += 1
        self.epoch_starts.append((self.leader_epoch, self.log.log_end_offset))
        # fetches waiting on this partition answer now (their next request finds the new leader)
        self.wake()

    @property
    def high_watermark(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, or the high watermark."""
        return self.producers.last_stable_offset(self.high_watermark)

    def first_unstable_offset(self) -> int | None:
        return self.producers.first_unstable_offset()

    # --- writes ----------------------------------------------------------------------------
    @property
    def fsync_always(self) -> bool:
        """fsync=always: an acknowledged write has been fsynced before its answer."""
        return self.log.config.fsync == "always"

    def append(self, batch: bytes | bytearray, *, now_ms: int, origin: AppendOrigin = AppendOrigin.CLIENT,
               header: BatchHeader | None = None, fsync_now: bool = False) -> Appended:
        """Append one record batch (already validated as a batch). Raises ProduceError when the
        producer state refuses it. With fsync_now and fsync=always the log is fsynced before
        returning, on the loop (the coordinators' small writes); callers that write to many
        partitions fsync them together afterwards with `flush_appended`."""
        f = (header if header is not None else BatchHeader(batch, 0)).fields()  # one unpack
        states = self.producers
        pid = f.producer_id
        if pid >= 0:
            epoch, first_seq, last_seq, transactional = (f.producer_epoch, f.base_sequence, f.last_sequence,
                                                         f.is_transactional)
            if origin is AppendOrigin.CLIENT:
                dup = states.check(pid, epoch, first_seq, last_seq)
                if dup is not None:
                    # Kafka answers a duplicate with the original batch's offset and, as its log
                    # append time, the timestamp kept for that batch
                    return Appended(dup.first_offset, dup.last_offset, dup.timestamp, self.log.log_start_offset,
                                    True)
                if not transactional and states.in_transaction(pid):
                    raise ProduceError(ErrorCode.invalid_txn_state,
                                       f"producer {pid} has an open transaction on this partition")
        # bytes go to the log as they are (it stamps the header without copying the batch)
        info = self.log.append(batch, leader_epoch=self.leader_epoch, now_ms=now_ms)
        if pid >= 0:
            states.record_batch(pid, epoch, first_seq, last_seq, info.base_offset, info.last_offset,
                                info.max_timestamp, transactional=transactional)
        if fsync_now and self.fsync_always:
            self.log.flush()
        # read_uncommitted fetches see the new data at once; read_committed ones when the LSO moves
        self.wake()
        return Appended(info.base_offset, info.last_offset, info.log_append_time_ms, info.log_start_offset)

    def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, *,
                      now_ms: int) -> Appended:
        """Append a COMMIT/ABORT marker and close the producer's transaction on this partition
        (Kafka's ProducerAppendInfo.appendEndTxnMarker). Raises ProduceError when the marker is
        fenced. An abort of a transaction that wrote here goes into the aborted-transaction
        index with the last stable offset after it. The LSO moves: waiting fetches wake."""
        states = self.producers
        states.check_marker(producer_id, producer_epoch, coordinator_epoch)
        batch = build_control_batch(commit, producer_id=producer_id, producer_epoch=producer_epoch,
                                    coordinator_epoch=coordinator_epoch, timestamp_ms=now_ms)
        info = self.log.append(batch, leader_epoch=self.leader_epoch, now_ms=now_ms)
        first = states.complete_txn(producer_id, producer_epoch, coordinator_epoch, now_ms)
        if not commit and first is not None:
            self.log.append_aborted_txn(producer_id, first, info.base_offset, self.last_stable_offset)
        self.wake()
        return Appended(info.base_offset, info.last_offset, info.log_append_time_ms, info.log_start_offset)

    # --- fetches waiting for data ------------------------------------------------------------
    def add_waiter(self, event: trio.Event) -> None:
        self._waiters.add(event)

    def remove_waiter(self, event: trio.Event) -> None:
        self._waiters.discard(event)

    def wake(self) -> None:
        """New data or a moved LSO: wake every fetch waiting on this partition."""
        if self._waiters:
            for ev in self._waiters:
                ev.set()
            self._waiters.clear()


async def flush_appended(parts: Iterable[Partition]) -> str | None:
    """fsync=always: fsync the partitions a request appended to, in a worker thread, before
    the request is answered. Partitions deleted meanwhile are passed over. Returns the first
    failure's text (those writes are not durable: the caller must not acknowledge them), or None."""
    todo = list({id(p): p for p in parts if p.fsync_always}.values())
    if not todo:
        return None
    return await trio.to_thread.run_sync(_flush_logs, todo)


def _flush_logs(parts: list[Partition]) -> str | None:
    failed = None
    for p in parts:
        try:
            p.log.flush()
        except ValueError:
            pass  # its file was closed: deleted meanwhile
        except OSError as exc:
            if exc.errno == errno.EBADF:
                continue  # deleted meanwhile
            log.warning("fsync of %s-%d failed: %s", p.topic.name, p.index, exc)
            failed = failed or (exc.strerror or str(exc))
    return failed


@dataclass(frozen=True)
class ProducePolicy:
    """The topic configs Produce checks on every batch, parsed once per config change."""

    compacted: bool = False
    timestamp_before_max_ms: int = 2**63 - 1  # message.timestamp.before.max.ms
    timestamp_after_max_ms: int = 3_600_000   # message.timestamp.after.max.ms
    log_append_time: bool = False
    # compression.type as a codec id (protocol.records.COMPRESSION_*); None for "producer"
    compression: int | None = None
    # that codec's compression.<codec>.level (KIP-390); None: the codec's default
    compression_level: int | None = None
    # acks=all needs at least this many in-sync replicas (NOT_ENOUGH_REPLICAS otherwise)
    min_insync_replicas: int = 1


# compression.type values -> codec ids
TOPIC_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


_LEVEL_KEYS = {1: "compression.gzip.level", 3: "compression.lz4.level", 4: "compression.zstd.level"}


def _level(configs: dict[str, Any], codec: int | None) -> int | None:
    key = _LEVEL_KEYS.get(codec) if codec is not None else None
    value = configs.get(key) if key is not None else None
    return None if value in (None, "") else int(value)


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str] = field(default_factory=dict)
    partitions: list[Partition] = field(default_factory=list)
    policy: ProducePolicy = field(default_factory=ProducePolicy)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class Cluster:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.node_id: int = config["node.id"]
        # every node id this process serves; node_id (the first) is the controller
        self.node_ids: list[int] = [self.node_id + i for i in range(max(1, config["nodes"]))]
        # nodes taken down (their ports refuse connections)
        self.down: set[int] = set()
        self.cluster_id: str = config["cluster.id"]
        self.data_dir = Path(config.data_dir)
        OPEN_FILES.set_limit(config["log.segment.open.files.max"])
        self.meta_dir = self.data_dir / "__cluster_metadata"
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}

    # --- persistence ---------------------------------------------------------------------
    def load(self) -> None:
        self.meta_dir.mkdir(parents=True, exist_ok=True)
        path = self.meta_dir / "topics.json"
        if not path.exists():
            return
        data = json.loads(path.read_text())
        for entry in data["topics"]:
            topic = Topic(entry["name"], uuid.UUID(entry["id"]), dict(entry["configs"]))
            self._attach(topic)
            replicas = self._stored_replicas(entry)
            for i in range(entry["partitions"]):
                self._open_partition(topic, i, replicas[i])

    def _stored_replicas(self, entry: dict) -> list[list[int]]:
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
        return self.config["default.replication.factor"]

    def save(self) -> None:
        self.meta_dir.mkdir(parents=True, exist_ok=True)
        data = {"topics": [
            {"name": t.name, "id": str(t.topic_id), "partitions": len(t.partitions), "configs": t.configs,
             "replicas": [p.replicas for p in t.partitions]}
            for t in self.topics.values()
        ]}
        tmp = self.meta_dir / "topics.json.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.meta_dir / "topics.json")

    # --- topics ----------------------------------------------------------------------------
    def log_config(self, topic: Topic) -> LogConfig:
        from .topic_configs import topic_config_default

        eff = self.effective_configs(topic)

        def value(key: str) -> Any:
            # the keys kafkalite's broker settings do not default (Kafka's topic default then)
            return eff.get(key) if eff.get(key) is not None else topic_config_default(key)

        return LogConfig(
            # internal.segment.bytes (Kafka's test-only override) wins over segment.bytes
            segment_bytes=int(eff.get("internal.segment.bytes") or eff["segment.bytes"]),
            segment_ms=int(eff["segment.ms"]),
            retention_ms=int(eff["retention.ms"]),
            retention_bytes=int(eff["retention.bytes"]),
            index_interval_bytes=int(eff["index.interval.bytes"]),
            max_message_bytes=int(eff["max.message.bytes"]),
            cleanup_policy=str(eff["cleanup.policy"]),
            delete_retention_ms=int(value("delete.retention.ms")),
            min_cleanable_dirty_ratio=float(value("min.cleanable.dirty.ratio")),
            timestamp_type=str(eff["message.timestamp.type"]),
            fsync=self.config["fsync"],
        )

    def effective_configs(self, topic: Topic) -> dict[str, Any]:
        eff = self.config.topic_defaults()
        eff.update(topic.configs)
        return eff

    def produce_policy(self, topic: Topic) -> ProducePolicy:
        from .topic_configs import topic_config_default

        eff = self.effective_configs(topic)

        def number(key: str) -> int:
            return int(eff.get(key) or str(topic_config_default(key)))

        codec = TOPIC_CODECS.get(str(eff.get("compression.type") or "producer").lower())
        return ProducePolicy(
            compacted="compact" in str(eff["cleanup.policy"]),
            timestamp_before_max_ms=number("message.timestamp.before.max.ms"),
            timestamp_after_max_ms=number("message.timestamp.after.max.ms"),
            log_append_time=str(eff["message.timestamp.type"]) == "LogAppendTime",
            compression=codec,
            compression_level=_level(eff, codec),
            min_insync_replicas=number("min.insync.replicas"),
        )

    def _attach(self, topic: Topic) -> None:
        topic.policy = self.produce_policy(topic)
        self.topics[topic.name] = topic
        self.topics_by_id[topic.topic_id] = topic

    def _detach(self, topic: Topic) -> None:
        if self.topics.get(topic.name) is topic:
            del self.topics[topic.name]
            del self.topics_by_id[topic.topic_id]

    def _open_partition(self, topic: Topic, index: int, replicas: list[int]) -> Partition:
        directory = self.data_dir / f"{topic.name}-{index}"
        plog = PartitionLog.open(directory, self.log_config(topic), now_ms=now_ms())
        part = Partition(topic, index, plog, list(replicas))
        if len(self.node_ids) > 1 and plog.log_end_offset > plog.log_start_offset:
            # leaders moved in an earlier run: go on from the last epoch the log holds, so that
            # no client that saw it is shown an older one (clients ignore metadata that goes back)
            for _base, batch in plog.batches_from(plog.log_end_offset - 1):
                part.leader_epoch = max(part.leader_epoch, BatchHeader(batch, 0).partition_leader_epoch)
            if part.leader_epoch:
                part.epoch_starts.append((part.leader_epoch, plog.log_end_offset))
        replay_producer_state(part)
        topic.partitions.append(part)
        return part

    def create_topic(self, name: str, num_partitions: int, configs: dict[str, str] | None = None, *,
                     replication_factor: int | None = None, assignment: list[list[int]] | None = None) -> Topic:
        """Creates a topic with the given replica lists, or placed by Kafka's rule with the given
        replication factor (default_replication_factor when None). Raises PlacementError when
        the replication factor exceeds the nodes."""
        if assignment is None:
            rf = self.default_replication_factor(name) if replication_factor is None else replication_factor
            assignment = self.placement(name, num_partitions, rf)
        topic = Topic(name, uuid.uuid4(), dict(configs or {}))
        try:
            for i in range(num_partitions):
                self._open_partition(topic, i, assignment[i])
            self._attach(topic)
            self.save()
        except OSError:
            # All or nothing (a full or failing disk): a topic missing partitions, or missing
            # from topics.json and so gone after a restart, is never served; its partition
            # directories go (delete writes nothing), and the same request made again creates
            # it whole.
            self._detach(topic)
            for part in topic.partitions:
                part.log.delete()
            raise
        log.info("created topic %s with %d partition(s) id=%s", name, num_partitions, topic.topic_id)
        return topic

    def add_partitions(self, topic: Topic, total: int, assignment: list[list[int]] | None = None) -> None:
        """New partitions up to `total`, with the given replica lists for the new ones, or placed
        as the topic's first partitions were (same replication factor)."""
        first = len(topic.partitions)
        if assignment is None:
            rf = len(topic.partitions[0].replicas) if topic.partitions else 1
            assignment = self.placement(topic.name, total, rf)[first:]
        for i in range(first, total):
            self._open_partition(topic, i, assignment[i - first])
        self.save()

    def delete_topic(self, topic: Topic) -> None:
        del self.topics[topic.name]
        del self.topics_by_id[topic.topic_id]
        self.save()
        for part in topic.partitions:
            part.wake()
            part.log.delete()
        log.info("deleted topic %s", topic.name)

    def alter_topic_configs(self, topic: Topic, configs: dict[str, str]) -> None:
        topic.configs = dict(configs)
        topic.policy = self.produce_policy(topic)
        self.save()
        for part in topic.partitions:
            part.log.update_config(self.log_config(topic))

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
            part.replicas[part.replicas.index(old)] = node
            part.isr = [n for n in part.isr if n != old]
            self.save()
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
                part.log.write_producer_snapshot(part.log.log_end_offset, part.producers.to_snapshot())
            except Exception:
                log.exception("cannot write the producer snapshot of %s-%d", part.topic.name, part.index)

    def close(self) -> None:
        for part in self.all_partitions():
            part.log.close()


def replay_producer_state(part: Partition) -> None:
    """Rebuild the producer state of a partition from its log (on startup and creation).

    Data batches update each producer's epoch, sequences and the first offset of its open
    transaction; a COMMIT/ABORT marker closes that transaction (Kafka's
    ProducerAppendInfo.appendEndTxnMarker). An abort whose entry is missing from the
    aborted-transaction index (a crash between the marker and the index write) is added
    again, so read_committed consumers never see aborted records after a restart. Replay
    starts from the newest producer snapshot (written at clean shutdown) when there is one."""
    plog = part.log
    start = plog.log_start_offset
    snapshot = plog.latest_producer_snapshot()
    if snapshot is not None:
        try:
            part.producers = ProducerStates.from_snapshot(snapshot[1])
            start = max(start, snapshot[0])
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("%s-%d: ignoring the producer snapshot at offset %d: %s", part.topic.name, part.index,
                        snapshot[0], exc)
            part.producers = ProducerStates()
    states = part.producers
    for base_offset, batch in plog.batches_from(start):
        h = BatchHeader(batch, 0)
        pid = h.producer_id
        if pid < 0:
            continue
        if h.is_control:
            if h.record_count == 0:
                continue  # the transaction was cleaned away
            try:
                commit, coordinator_epoch = parse_control_record(batch, 0)
            except ValueError:
                continue  # not a transaction marker
            first = states.complete_txn(pid, h.producer_epoch, coordinator_epoch, h.max_timestamp)
            if not commit and first is not None and not _has_aborted_entry(plog, pid, first, base_offset):
                plog.append_aborted_txn(pid, first, base_offset, states.last_stable_offset(base_offset + 1))
            continue
        states.record_batch(pid, h.producer_epoch, h.base_sequence, h.last_sequence, base_offset,
                            base_offset + h.last_offset_delta, h.max_timestamp, transactional=h.is_transactional)


def _has_aborted_entry(plog, producer_id: int, first_offset: int, last_offset: int) -> bool:
    for a in plog.aborted_txns(first_offset, last_offset + 1):
        if a.producer_id == producer_id and a.first_offset == first_offset:
            return True
    return False
