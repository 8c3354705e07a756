"""Seed files: topics, records, group offsets, ACLs and SCRAM users put into a broker before its
ready line (`kafkalite --seed FILE`, KAFKALITE_SEED, `kafkalite.running(seed=...)`, the pytest
plugin's ini `kafkalite_seed`) or at run time (the `seed` control), from one JSON document:

    {"topics": [{"name": "orders", "partitions": 3, "replication_factor": 1,
                 "configs": {"cleanup.policy": "compact"}, "records": "orders.jsonl"},
                {"name": "payments", "records": [{"key": "p1", "value": {"amount": 3}}]}],
     "groups": [{"group": "billing", "offsets": {"orders": {"0": 5}}}],
     "acls": [{"principal": "User:alice", "resource_type": "TOPIC", "name": "orders",
               "pattern": "LITERAL", "operation": "READ", "permission": "ALLOW"}],
     "users": [{"name": "alice", "mechanism": "SCRAM-SHA-256", "password": "alice-secret"}]}

- topics: `name`; `partitions` (default num.partitions), `replication_factor` (default
  default.replication.factor), `configs` (topic configs, checked as CreateTopics checks them),
  `records`: a list, or the path of a JSON Lines file (absolute, or relative to the seed file).
  A topic that exists already (a data dir kept from an earlier start) is left as it is, records
  and all, so a seed applied at every start does not write its records twice.
- a record: `value`, and optionally `key`, `headers` (an object), `timestamp` (ms since the epoch;
  default: now), `partition` (default: Kafka's default partitioner: murmur2 of the key, and one
  partition after another for records without a key), `transaction` (`"commit"` or `"abort"`:
  consecutive records with the same value form one transaction, written with its own producer id
  and closed by a COMMIT or ABORT marker, so read_committed consumers see the committed and skip
  the aborted). A string is written as its UTF-8 bytes, any other JSON value as its JSON text,
  null as a null key, value or header value.
- groups: `group` and `offsets` {topic: {partition: offset}}: committed as an admin's
  alterConsumerGroupOffsets would (the group exists, empty, with those offsets).
- acls: `principal`, `resource_type` (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, ...), `name`,
  `pattern` (LITERAL, default, or PREFIXED), `operation`, `permission` (ALLOW, default, or DENY),
  `host` (default *); they need the broker's authorizer (authorizer.class.name).
- users: `name`, `mechanism` (SCRAM-SHA-256 or SCRAM-SHA-512), `password`, `iterations`
  (default 4096).

`load_seed` reads and checks the whole document (records files included) before anything is
applied. A file is read only when it is a regular file of at most `seed.max.bytes` (a FIFO, a
device such as /dev/zero or a directory would never end or never fit), and the seed control reads
and checks off the event loop (in a worker thread), so clients are answered meanwhile; a mistake is a `SeedError` whose text is one line naming the file, the entry and what is
wrong (the CLI prints it and exits with status 2). `apply_seed` then writes it on the broker's
loop, in one step, through the same code as the requests it stands for (Partition.append and
append_marker, the group coordinator's commit, the authorizer, the SCRAM store).
"""

from __future__ import annotations

import json
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalite.protocol.records import Record, build_batch

from .clock import now_ms
from .cluster import validate_topic_name
from .credentials import MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential
from .settings.topic_keys import validate_topic_configs
from .settings.values import ConfigError

if TYPE_CHECKING:
    from .state import Broker

log = logging.getLogger("kafkalite.seed")

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
_TOP_KEYS = {"topics", "groups", "acls", "users"}
_TOPIC_KEYS = {"name", "partitions", "replication_factor", "configs", "records"}
_RECORD_KEYS = {"value", "key", "headers", "timestamp", "partition", "transaction"}
_ACL_KEYS = {"principal", "resource_type", "name", "pattern", "operation", "permission", "host"}
_USER_KEYS = {"name", "mechanism", "password", "iterations"}


# id(broker) -> the seed it started with (--seed): the reset control applies it again, since a
# fresh start of that broker has it
_AT_START: dict[int, "Seed"] = {}


def seed_at_start(broker: "Broker") -> "Seed | None":
    return _AT_START.get(id(broker))


class SeedError(ValueError):
    """A seed document that cannot be applied; the text names the file, the entry and the fault."""


def read_text_limited(path: Path, max_bytes: int) -> str:
    """The UTF-8 text of a regular file of at most `max_bytes`; OSError or ValueError (its text
    says what is wrong) otherwise. The file is opened without blocking (a FIFO without a writer
    would wait forever) and what it is, is asked of the open file, not of its name."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode)
                    else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "not a file")
            raise ValueError(f"{path} is {kind}, not a regular file")
        if info.st_size > max_bytes:
            raise ValueError(f"{path} has {info.st_size} bytes, more than seed.max.bytes ({max_bytes})")
        data = f.read(max_bytes + 1)  # a file that grows while it is read stops at the cap too
    if len(data) > max_bytes:
        raise ValueError(f"{path} has more than seed.max.bytes ({max_bytes}) bytes")
    return data.decode("utf-8")


def seed_max_bytes(broker_values: dict[str, Any] | None) -> int:
    from .settings.broker_keys import BROKER_KEYS

    value = (broker_values or {}).get("seed.max.bytes")
    return int(value) if value is not None else int(BROKER_KEYS["seed.max.bytes"].default)


@dataclass
class SeedRecord:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp: int | None
    partition: int | None
    transaction: str | None  # "commit", "abort" or None


@dataclass
class SeedTopic:
    name: str
    partitions: int | None
    replication_factor: int | None
    configs: dict[str, str]
    records: list[SeedRecord]
    # (partitions, the records encoded for that many) once prepare_seed ran
    runs: "tuple[int, list[SeedRun]] | None" = None


@dataclass
class Seed:
    source: str  # the file, or "seed control"
    topics: list[SeedTopic] = field(default_factory=list)
    # group -> {(topic, partition): offset}
    groups: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    acls: list[dict[str, str]] = field(default_factory=list)
    users: list[tuple[str, str, str, int]] = field(default_factory=list)

    def fail(self, entry: str, what: str) -> SeedError:
        return SeedError(f"{self.source}: {entry}: {what}")


def _bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, separators=(",", ":")).encode()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _object(seed: Seed, entry: str, value: Any, keys: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise seed.fail(entry, f"expected an object, not {json.dumps(value)[:60]}")
    unknown = sorted(set(value) - keys)
    if unknown:
        raise seed.fail(entry, f"unknown key {unknown[0]!r} (known: {', '.join(sorted(keys))})")
    return value


def _record(seed: Seed, entry: str, raw: Any, partitions: int | None) -> SeedRecord:
    r = _object(seed, entry, raw, _RECORD_KEYS)
    if "value" not in r:
        raise seed.fail(entry, "a record needs a value (null for a tombstone)")
    headers_raw = r.get("headers") or {}
    if not isinstance(headers_raw, dict):
        raise seed.fail(entry, "headers must be an object of name: value")
    timestamp = r.get("timestamp")
    if timestamp is not None and (not _is_int(timestamp) or timestamp < 0):
        raise seed.fail(entry, f"timestamp must be milliseconds since the epoch, not {timestamp!r}")
    partition = r.get("partition")
    if partition is not None and (not _is_int(partition) or partition < 0
                                  or (partitions is not None and partition >= partitions)):
        raise seed.fail(entry, f"partition {partition!r} is not one of the topic's partitions")
    transaction = r.get("transaction")
    if transaction not in (None, "commit", "abort"):
        raise seed.fail(entry, f"transaction must be \"commit\" or \"abort\", not {transaction!r}")
    return SeedRecord(_bytes(r.get("key")), _bytes(r["value"]),
                      [(str(k), _bytes(v)) for k, v in headers_raw.items()], timestamp, partition, transaction)


def _records(seed: Seed, entry: str, raw: Any, base_dir: Path, partitions: int | None,
             max_bytes: int) -> list[SeedRecord]:
    if raw is None:
        return []
    if isinstance(raw, list):
        return [_record(seed, f"{entry}.records[{i}]", r, partitions) for i, r in enumerate(raw)]
    if not isinstance(raw, str):
        raise seed.fail(f"{entry}.records", "expected a list of records or the path of a JSON Lines file")
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    try:
        lines = read_text_limited(path, max_bytes).splitlines()
    except OSError as exc:
        raise seed.fail(f"{entry}.records", f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise seed.fail(f"{entry}.records", f"{path} is not UTF-8: {exc}") from None
    except ValueError as exc:
        raise seed.fail(f"{entry}.records", str(exc)) from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise seed.fail(f"{entry}.records {path}:{number}", f"not JSON: {exc}") from None
        out.append(_record(seed, f"{entry}.records {path}:{number}", obj, partitions))
    return out


def _topic(seed: Seed, i: int, raw: Any, base_dir: Path, broker_values: dict[str, Any] | None) -> SeedTopic:
    entry = f"topics[{i}]"
    t = _object(seed, entry, raw, _TOPIC_KEYS)
    name = t.get("name")
    if not isinstance(name, str):
        raise seed.fail(entry, "a topic needs a name")
    entry = f"topics[{i}] ({name})"
    reason = validate_topic_name(name)
    if reason is not None:
        raise seed.fail(entry, reason)
    if name.startswith("__"):
        raise seed.fail(entry, "internal topics cannot be seeded")
    partitions, rf = t.get("partitions"), t.get("replication_factor")
    for what, value in (("partitions", partitions), ("replication_factor", rf)):
        if value is not None and (not _is_int(value) or value < 1):
            raise seed.fail(entry, f"{what} must be a positive integer, not {value!r}")
    configs_raw = t.get("configs") or {}
    if not isinstance(configs_raw, dict):
        raise seed.fail(entry, "configs must be an object of topic config: value")
    configs = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in configs_raw.items()}
    try:
        validate_topic_configs(configs, broker_values=broker_values)
    except ConfigError as exc:
        raise seed.fail(f"{entry}.configs", str(exc)) from None
    return SeedTopic(name, partitions, rf, configs, _records(seed, entry, t.get("records"), base_dir, partitions,
                                                            seed_max_bytes(broker_values)))


def _acl(seed: Seed, i: int, raw: Any) -> dict[str, str]:
    from .authorizer import AclOperation, AclPermissionType, PatternType, ResourceType

    entry = f"acls[{i}]"
    a = _object(seed, entry, raw, _ACL_KEYS)
    out = {"principal": a.get("principal"), "name": a.get("name"), "host": a.get("host", "*")}
    for key in ("principal", "name", "host"):
        if not isinstance(out[key], str) or not out[key]:
            raise seed.fail(entry, f"{key} must be a non-empty string")
    if ":" not in out["principal"]:
        raise seed.fail(entry, f"principal must be TYPE:NAME (User:alice), not {out['principal']!r}")
    for key, enum_type, default, refused in (
            ("resource_type", ResourceType, None, ("ANY", "UNKNOWN")), ("pattern", PatternType, "LITERAL",
                                                                        ("ANY", "MATCH", "UNKNOWN")),
            ("operation", AclOperation, None, ("ANY", "UNKNOWN")),
            ("permission", AclPermissionType, "ALLOW", ("ANY", "UNKNOWN"))):
        value = a.get(key, default)
        names = [m.name for m in enum_type if m.name not in refused]
        if not isinstance(value, str) or value.upper() not in names:
            raise seed.fail(entry, f"{key} must be one of {', '.join(names)}, not {value!r}")
        out[key] = value.upper()
    return out


def _user(seed: Seed, i: int, raw: Any) -> tuple[str, str, str, int]:
    entry = f"users[{i}]"
    u = _object(seed, entry, raw, _USER_KEYS)
    name, mechanism, password = u.get("name"), u.get("mechanism"), u.get("password")
    iterations = u.get("iterations", 4096)
    if not isinstance(name, str) or not name:
        raise seed.fail(entry, "a user needs a name")
    if mechanism not in MECHANISMS:
        raise seed.fail(f"users[{i}] ({name})", f"mechanism must be {' or '.join(MECHANISMS)}, not {mechanism!r}")
    if not isinstance(password, str) or not password:
        raise seed.fail(f"users[{i}] ({name})", "a user needs a password")
    if not _is_int(iterations) or not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise seed.fail(f"users[{i}] ({name})", f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}")
    return name, mechanism, password, iterations


def parse_seed(document: Any, source: str, base_dir: Path, broker_values: dict[str, Any] | None = None) -> Seed:
    """Check a decoded seed document; raises SeedError."""
    seed = Seed(source)
    doc = _object(seed, "the document", document, _TOP_KEYS)
    for key in _TOP_KEYS:
        if key in doc and not isinstance(doc[key], list):
            raise seed.fail(key, "expected a list")
    seed.topics = [_topic(seed, i, t, base_dir, broker_values) for i, t in enumerate(doc.get("topics") or [])]
    names = [t.name for t in seed.topics]
    for name in names:
        if names.count(name) > 1:
            raise seed.fail(f"topics ({name})", "the topic is listed twice")
    seeded = {t.name: t.partitions for t in seed.topics}
    for i, raw in enumerate(doc.get("groups") or []):
        g = _object(seed, f"groups[{i}]", raw, {"group", "offsets"})
        group = g.get("group")
        if not isinstance(group, str) or not group:
            raise seed.fail(f"groups[{i}]", "a group needs a group id (group)")
        offsets = g.get("offsets") or {}
        if not isinstance(offsets, dict):
            raise seed.fail(f"groups[{i}] ({group})", "offsets must be {topic: {partition: offset}}")
        out = seed.groups.setdefault(group, {})
        for topic, parts in offsets.items():
            if not isinstance(parts, dict):
                raise seed.fail(f"groups[{i}] ({group}).offsets.{topic}", "expected {partition: offset}")
            for p, offset in parts.items():
                where = f"groups[{i}] ({group}).offsets.{topic}.{p}"
                if not str(p).isdigit():
                    raise seed.fail(where, f"partition must be a number, not {p!r}")
                count = seeded.get(topic)
                if count is not None and int(p) >= count:
                    raise seed.fail(where, f"topic {topic} has {count} partition(s)")
                if not _is_int(offset) or offset < 0:
                    raise seed.fail(where, f"offset must be a non-negative integer, not {offset!r}")
                out[(topic, int(p))] = offset
    seed.acls = [_acl(seed, i, a) for i, a in enumerate(doc.get("acls") or [])]
    seed.users = [_user(seed, i, u) for i, u in enumerate(doc.get("users") or [])]
    return seed


def load_seed(path: str | Path, broker_values: dict[str, Any] | None = None) -> Seed:
    """Read and check a seed file; raises SeedError."""
    p = Path(path).expanduser()
    try:
        text = read_text_limited(p, seed_max_bytes(broker_values))
    except OSError as exc:
        raise SeedError(f"{p}: cannot read the seed file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SeedError(f"{p}: the seed file is not UTF-8: {exc}") from None
    except ValueError as exc:
        raise SeedError(f"{p}: {exc}") from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise SeedError(f"{p}: not JSON: {exc}") from None
    return parse_seed(document, str(p), p.resolve().parent, broker_values)


# --- applying --------------------------------------------------------------------------------

def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 (the Java client's default partitioner for keyed records)."""
    length = len(data)
    seed, m, r = 0x9747B28C, 0x5BD1E995, 24
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length % 4
    tail = length - rest
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def default_partition(key: bytes | None, partitions: int, counter: list[int]) -> int:
    if key is not None:
        return (murmur2(key) & 0x7FFFFFFF) % partitions
    counter[0] += 1
    return (counter[0] - 1) % partitions


@dataclass
class SeedRun:
    """Consecutive records of one kind (plain, or one transaction) placed on their partitions:
    plain ones as finished batches, a transaction's as records (their producer id is chosen when
    they are written)."""

    transaction: str | None
    batches: dict[int, Any]  # partition -> a batch (plain) or a list of Record (a transaction)
    count: int


def encode_records(records: list[SeedRecord], partitions: int) -> list[SeedRun]:
    """The records placed on `partitions` partitions (Kafka's default partitioner where a record
    names none) and, for plain runs, encoded as batches: the costly part of a seed, which needs
    no broker state, so the seed control does it off the event loop."""
    counter = [0]
    placed = [(r, r.partition if r.partition is not None else default_partition(r.key, partitions, counter))
              for r in records]
    runs = []
    i = 0
    while i < len(placed):
        txn = placed[i][0].transaction
        j = i
        while j < len(placed) and placed[j][0].transaction == txn:
            j += 1
        by_partition: dict[int, list[Record]] = {}
        now = now_ms()
        for rec, p in placed[i:j]:
            by_partition.setdefault(p, []).append(
                Record(key=rec.key, value=rec.value, headers=tuple(rec.headers),
                       timestamp_ms=rec.timestamp if rec.timestamp is not None else now))
        batches: dict[int, Any] = by_partition
        if txn is None:
            batches = {p: build_batch(recs) for p, recs in by_partition.items()}
        runs.append(SeedRun(txn, batches, j - i))
        i = j
    return runs


def prepare_seed(seed: Seed, default_partitions: int) -> Seed:
    """Encode every topic's records ahead of `apply_seed` (in a worker thread: see encode_records)."""
    for t in seed.topics:
        partitions = t.partitions or default_partitions
        t.runs = (partitions, encode_records(t.records, partitions))
    return seed


def _write_records(broker: "Broker", topic, t: SeedTopic) -> int:
    """Append the records: runs of plain records as batches per partition, each transaction
    group with its own producer id and a marker on every partition it wrote to."""
    n = len(topic.partitions)
    runs = t.runs[1] if t.runs is not None and t.runs[0] == n else encode_records(t.records, n)
    written = 0
    for run in runs:
        now = now_ms()
        if run.transaction is None:
            for p, batch in run.batches.items():
                topic.partitions[p].append(batch, now_ms=now)
        else:
            pid = broker.services.producer_ids.generate()
            for p, recs in run.batches.items():
                topic.partitions[p].append(build_batch(recs, producer_id=pid, producer_epoch=0, base_sequence=0,
                                                       transactional=True), now_ms=now)
            for p in run.batches:
                topic.partitions[p].append_marker(pid, 0, 0, run.transaction == "commit", now_ms=now)
        written += run.count
    return written


def apply_seed(broker: "Broker", seed: Seed, *, at_start: bool = False) -> dict[str, Any]:
    """Write the seed into the broker (on its trio loop, no await); raises SeedError for what only
    the running broker can refuse (a replication factor above the nodes, ACLs without an
    authorizer). `at_start`: the broker's --seed, which the reset control applies again."""
    if at_start:
        _AT_START[id(broker)] = seed
    cluster = broker.cluster
    if seed.acls and broker.authorizer is None:
        raise seed.fail("acls", "ACLs need the broker's authorizer (authorizer.class.name)")
    created, records = [], 0
    for t in seed.topics:
        if t.name in cluster.topics:
            log.info("seed %s: topic %s exists already; left as it is", seed.source, t.name)
            continue
        partitions = t.partitions or broker.config["num.partitions"]
        rf = t.replication_factor or cluster.default_replication_factor(t.name)
        if rf > len(cluster.node_ids):
            raise seed.fail(f"topics ({t.name})", f"replication factor {rf} is larger than the "
                                                  f"{len(cluster.node_ids)} node(s)")
        bad = [r.partition for r in t.records if r.partition is not None and r.partition >= partitions]
        if bad:
            raise seed.fail(f"topics ({t.name})", f"a record names partition {bad[0]} of {partitions}")
        topic = cluster.create_topic(t.name, partitions, t.configs, replication_factor=rf)
        created.append(t.name)
        records += _write_records(broker, topic, t)
    for group, offsets in seed.groups.items():
        missing = sorted({tp[0] for tp in offsets if cluster.partition(*tp) is None})
        if missing:
            raise seed.fail(f"groups ({group})", f"no partition {missing[0]} in the broker")
        broker.services.groups.commit_offsets(group, {tp: (off, -1, "") for tp, off in offsets.items()})
    if seed.acls:
        from .authorizer import Acl, AclOperation, AclPermissionType, PatternType, ResourceType

        assert broker.authorizer is not None
        broker.authorizer.create([Acl(int(ResourceType[a["resource_type"]]), a["name"], int(PatternType[a["pattern"]]),
                                      a["principal"], a["host"], int(AclOperation[a["operation"]]),
                                      int(AclPermissionType[a["permission"]])) for a in seed.acls])
    for name, mechanism, password, iterations in seed.users:
        broker.scram.put(name, mechanism, ScramCredential.from_password(mechanism, password, iterations))
    if seed.users:
        broker.scram.save()
    log.info("seed %s: %d topic(s) created, %d record(s), %d group(s), %d ACL(s), %d user(s)", seed.source,
             len(created), records, len(seed.groups), len(seed.acls), len(seed.users))
    return {"topics": created, "records": records, "groups": sorted(seed.groups), "acls": len(seed.acls),
            "users": [u[0] for u in seed.users]}
