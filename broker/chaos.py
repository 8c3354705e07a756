"""Seeded chaos: faults a correct Kafka client must survive, on a schedule drawn from a seed.

Off by default; on with `kafkalite --chaos SEED` (KAFKALITE_CHAOS, the broker key `chaos`,
`kafkalite.running(chaos=SEED)`) and `--chaos-profile` / `chaos.profile`, or the control `chaos`
(broker.controls.chaos), which also turns it off and lists what was injected (`chaos-log`).

Rules:
- Only what Kafka itself does to a client: per API, the retriable errors a Kafka 4.4 broker
  answers for it (`ERRORS`; answered without applying the request, as a broker that is not the
  leader or coordinator does not apply it), a response dropped after the request was applied
  (Produce and Fetch only: a lost acknowledgement, which the idempotent producer's sequence
  numbers and the consumer's position make harmless), a delayed response, a connection closed
  before the request is applied. Nothing here loses an acknowledged write or a committed
  transaction: an error or a close never applies the request, a drop or delay always does.
- Moves (on a cluster of more than one node; none in the gentle profile): at a drawn request of a
  partition API (Produce, Fetch, ListOffsets) the leadership of one of the partitions it names
  that the node it came to leads moves to another in-sync replica that is up, with a new leader
  epoch (broker.cluster.move_leader, what Kafka's controller does on an election); at a drawn
  request of a group or transaction API, the leadership of the coordinator partition of its
  group or transactional id moves so (FindCoordinator then answers the new node). The request
  then goes on to its handler, whose own answer on a node that leads no more is the fault:
  NOT_LEADER_OR_FOLLOWER (with KIP-951's new leader), FENCED_LEADER_EPOCH for a Fetch that
  carries the old epoch, NOT_COORDINATOR; a consumer's Fetch v11+ without an epoch is served by
  the old leader, now a follower, as Kafka's follower fetching serves it. Replicas are logical
  (one copy of the data, broker.cluster), so the log is the new leader's at once; a moved group
  coordinator unloads the partition (classic members waiting in JoinGroup or SyncGroup get
  NOT_COORDINATOR) and loads it from its log, and a moved transaction coordinator's markers
  carry the new coordinator epoch, as on Kafka (broker.groups.persistence, broker.transactions.log).
  Nothing led by the node the request came to, or no other in-sync replica up: nothing moves,
  and the request is not faulted.
- A topic created since chaos began is new to a client for its first FRESH_REQUESTS Produce and
  ListOffsets requests naming it (each API counted apart); one of those naming only new topics,
  that `draw` does not fault, is answered UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by topic
  id) without being applied when `unknown_draw` says so, as a Kafka broker answers before the
  metadata naming a new topic reaches it. Metadata itself is left alone.
- Replay: whether a request is faulted, and how, is a pure function of (seed, client id, API key,
  api_seq), api_seq being the request's number among that client id's requests of that API since
  chaos began (`draw`). Never wall time: the same seed and the same requests give the same faults.
  A topic's newness is counted in requests too (FRESH_REQUESTS), and where a move goes is drawn
  with the request (`Draw.pick`) from the in-sync replicas in order: the same requests give the
  same moves.
- A request right after a faulted one of the same client and API is never faulted (the draw of
  seq-1 is consulted, still a pure function; for unknown_topic the engine remembers the last
  seq it answered so), so a retry always gets through and every client makes progress whatever
  the seed. The chaos log names each move: the partition (and group or transactional id), the
  node it left, the node it went to and the new leader epoch.
- The engine is one dispatch hook (broker.hooks) on each API it faults, added when chaos starts:
  the faults of broker.controls.faults armed later are asked after it, and the reset control,
  which disarms those, leaves chaos running. ApiVersions, the SASL APIs and the admin APIs are
  never faulted (a client could not connect at all; an admin call is not a delivery).
"""

from __future__ import annotations

import collections
import hashlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kio.index import api_key_map
from kio.schema.errors import ErrorCode

from .handlers.common import CloseConnection
from .hooks import HookContext, Interception

if TYPE_CHECKING:
    from .partition import Partition, Topic
    from .state import Broker

log = logging.getLogger("kafkalite.chaos")

E = ErrorCode
_COORDINATOR = (E.coordinator_load_in_progress, E.not_coordinator)
_TXN_COORDINATOR = (E.coordinator_load_in_progress, E.not_coordinator, E.concurrent_transactions)
# kafka-clients 4.4's SyncGroup and Heartbeat handlers (AbstractCoordinator) retry
# COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR only: COORDINATOR_LOAD_IN_PROGRESS there is its
# "Unexpected error", which ends the consumer
_CLASSIC_MEMBER = (E.coordinator_not_available, E.not_coordinator)

# API key -> the retriable errors Kafka answers for that API (ReplicaManager for the partition
# APIs, KafkaApis.getCoordinator for FindCoordinator, the group and transaction coordinators for
# theirs). Produce's NOT_ENOUGH_REPLICAS and REQUEST_TIMED_OUT are acks=all answers only (acks=1
# never waits for replicas); InitProducerId's coordinator errors are for a transactional id only.
ERRORS: dict[int, tuple[ErrorCode, ...]] = {
    0: (E.not_leader_or_follower, E.not_enough_replicas, E.request_timed_out),  # Produce
    1: (E.not_leader_or_follower,),  # Fetch
    2: (E.not_leader_or_follower,),  # ListOffsets
    3: (),  # Metadata: delays and closes only
    8: _COORDINATOR,  # OffsetCommit
    9: _COORDINATOR,  # OffsetFetch
    10: (E.coordinator_not_available,),  # FindCoordinator
    11: _COORDINATOR,  # JoinGroup
    12: _CLASSIC_MEMBER,  # Heartbeat
    14: _CLASSIC_MEMBER,  # SyncGroup
    22: _TXN_COORDINATOR,  # InitProducerId
    24: _TXN_COORDINATOR,  # AddPartitionsToTxn
    25: _TXN_COORDINATOR,  # AddOffsetsToTxn
    26: _TXN_COORDINATOR,  # EndTxn
    28: _COORDINATOR,  # TxnOffsetCommit
    68: _COORDINATOR,  # ConsumerGroupHeartbeat
}
_ACKS_ALL_ONLY = {E.not_enough_replicas, E.request_timed_out}
# a dropped response costs the client its request timeout; only where it is a lost acknowledgement
_DROPPABLE = {0, 1}
# a leader move on these APIs moves a partition the request names; on the coordinator APIs, the
# coordinator of the request's group or transactional id (broker.handlers.leadership's rules)
_PARTITION_APIS = {0, 1, 2}
_GROUP_APIS = {8, 9, 11, 12, 14, 28, 68}
_TXN_APIS = {22, 24, 25, 26}
_MOVABLE = _PARTITION_APIS | _GROUP_APIS | _TXN_APIS
# the APIs a broker that has not learnt a new topic yet answers UNKNOWN_TOPIC_OR_PARTITION (or,
# by topic id, UNKNOWN_TOPIC_ID) for, and how many of a client's requests of one API naming a
# topic created since chaos began may meet it
_UNKNOWN_APIS = {0, 2}
FRESH_REQUESTS = 3
FAULTS = ("error", "drop", "delay", "close", "move", "unknown_topic")


@dataclass(frozen=True)
class Profile:
    """How often each kind of fault hits a request (probabilities per request), and the longest delay."""

    error: float
    close: float
    drop: float
    delay: float
    delay_ms_max: int
    move: float  # a leader or coordinator move (on a cluster of more than one node)
    unknown_topic: float  # of the requests within a new topic's first FRESH_REQUESTS


PROFILES: dict[str, Profile] = {
    "gentle": Profile(error=0.02, close=0.005, drop=0.002, delay=0.03, delay_ms_max=200, move=0.0,
                      unknown_topic=0.2),
    "default": Profile(error=0.06, close=0.015, drop=0.005, delay=0.06, delay_ms_max=500, move=0.02,
                       unknown_topic=0.4),
    "harsh": Profile(error=0.15, close=0.04, drop=0.015, delay=0.12, delay_ms_max=1000, move=0.05,
                     unknown_topic=0.6),
}


@dataclass(frozen=True)
class Draw:
    """The fault one request gets (None: none): a kind, and an error index or a delay."""

    fault: str | None
    pick: int  # which of the API's errors, the delay in ms, or (a move) which partition and node


def _uniform(seed: int, client_id: str, api_key: int, api_seq: int, salt: str = "") -> tuple[float, int]:
    digest = hashlib.blake2b(f"{seed}\x00{client_id}\x00{api_key}\x00{api_seq}{salt}".encode(),
                             digest_size=16).digest()
    return int.from_bytes(digest[:8], "big") / 2**64, int.from_bytes(digest[8:], "big")


def _raw(seed: int, profile: Profile, client_id: str, api_key: int, api_seq: int) -> Draw:
    u, bits = _uniform(seed, client_id, api_key, api_seq)
    errors = ERRORS.get(api_key, ())
    edge = 0.0
    for kind, rate in (("error", profile.error if errors else 0.0), ("close", profile.close),
                       ("drop", profile.drop if api_key in _DROPPABLE else 0.0), ("delay", profile.delay),
                       ("move", profile.move if api_key in _MOVABLE else 0.0)):
        edge += rate
        if u < edge:
            if kind == "error":
                return Draw(kind, bits % len(errors))
            if kind == "delay":
                return Draw(kind, 1 + bits % profile.delay_ms_max)
            if kind == "move":
                return Draw(kind, bits)
            return Draw(kind, 0)
    return Draw(None, 0)


def draw(seed: int, profile: Profile, client_id: str, api_key: int, api_seq: int) -> Draw:
    """The fault of request number `api_seq` (from 0) of `api_key` from `client_id`: a pure function
    of its arguments. A request right after a faulted one is never faulted."""
    if api_seq > 0 and _raw(seed, profile, client_id, api_key, api_seq - 1).fault is not None:
        return Draw(None, 0)
    return _raw(seed, profile, client_id, api_key, api_seq)


def unknown_draw(seed: int, profile: Profile, client_id: str, api_key: int, api_seq: int) -> bool:
    """Whether request number `api_seq` of `api_key` from `client_id`, when it names only topics
    still new to that client (see FRESH_REQUESTS) and `draw` faults it not, is answered as by a
    broker that has not learnt them yet: a pure function of its arguments, drawn apart from `draw`."""
    return api_key in _UNKNOWN_APIS and _uniform(seed, client_id, api_key, api_seq, "\x00unknown")[0] < profile.unknown_topic


@dataclass(eq=False)
class Chaos:
    """The running chaos of one broker: its seed, profile, per-client counters and log."""

    broker: "Broker"
    seed: int
    profile_name: str = "default"
    log_limit: int = 10_000
    started: float = field(default_factory=time.time)
    # (client id, API key) -> how many requests of that API the client has sent since chaos began
    api_seq: dict[tuple[str, int], int] = field(default_factory=dict)
    injected: collections.deque[dict[str, Any]] = field(init=False)  # the chaos log, newest last
    counts: collections.Counter[str] = field(default_factory=collections.Counter)

    def __post_init__(self) -> None:
        self.injected = collections.deque(maxlen=self.log_limit)
        self.profile = PROFILES[self.profile_name]
        # the topics there were when chaos began: the others are new, and a client's first
        # FRESH_REQUESTS requests of an API naming one may meet UNKNOWN_TOPIC_OR_PARTITION
        self.known_topics: frozenset[uuid.UUID] = frozenset(self.broker.cluster.topics_by_id)
        # (client id, API key, topic id) -> the client's requests of that API naming that new topic
        self.fresh_seen: dict[tuple[str, int, uuid.UUID], int] = {}
        # (client id, API key) -> the api_seq of its last request answered unknown_topic
        self.last_unknown: dict[tuple[str, int], int] = {}

    def __call__(self, ctx: HookContext, request: Any) -> Interception | None:
        """The dispatch hook: count the request and fault it when the schedule says so."""
        api_key = ctx.header.api_key
        client_id = ctx.client_id or ""
        key = (client_id, api_key)
        seq = self.api_seq.get(key, 0)
        self.api_seq[key] = seq + 1
        fresh = api_key in _UNKNOWN_APIS and self._names_only_fresh_topics(client_id, api_key, request)
        if api_key == 0 and getattr(request, "acks", -1) == 0:
            return None  # acks=0: no response to fault, and a close would lose what Kafka keeps
        if self.last_unknown.get(key) == seq - 1:
            return None  # the retry of a request answered unknown_topic gets through
        chosen = draw(self.seed, self.profile, client_id, api_key, seq)
        if chosen.fault is None:
            if fresh and unknown_draw(self.seed, self.profile, client_id, api_key, seq):
                self.last_unknown[key] = seq
                return self._unknown_topic(ctx, request, client_id, seq)
            return None
        error: ErrorCode | None = None
        moved: dict[str, Any] | None = None
        if chosen.fault == "error":
            error = ERRORS[api_key][chosen.pick]
            if not self._fits(api_key, request, error):
                return None
        elif chosen.fault == "move":
            moved = self._move(ctx, request, chosen.pick)
            if moved is None:  # one node, nothing led here, or no other in-sync replica up
                return None
        entry = self._entry(api_key, seq, client_id, chosen.fault)
        if error is not None:
            entry["error"] = error.name.upper()
        if chosen.fault == "delay":
            entry["delay_ms"] = chosen.pick
        if moved is not None:
            entry.update(moved)
        self.injected.append(entry)
        self.counts[chosen.fault] += 1
        if moved is not None:
            log.info("chaos move on %s #%d from client %r: %s", api_key_map[api_key], seq, client_id, _moved_text(moved))
            # the request goes on to its handler, on a node that leads no more: its answer is the
            # handler's own NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH or NOT_COORDINATOR
            return None
        log.info("chaos %s on %s #%d from client %r%s", chosen.fault, api_key_map[api_key], seq, client_id,
                 f" ({entry['error']})" if error is not None else "")
        if chosen.fault == "drop":
            return Interception(drop=True)
        if chosen.fault == "delay":
            return Interception(delay_ms=chosen.pick)
        return Interception(answer=lambda: self._answer(ctx, request, error))

    def _entry(self, api_key: int, seq: int, client_id: str, fault: str) -> dict[str, Any]:
        return {"api": api_key_map[api_key], "api_key": api_key, "api_seq": seq, "client_id": client_id,
                "fault": fault, "time_ms": int(time.time() * 1000)}

    # --- new topics: UNKNOWN_TOPIC_OR_PARTITION a moment after creation ------------------------
    def _names_only_fresh_topics(self, client_id: str, api_key: int, request: Any) -> bool:
        """Count the request against each new topic it names; whether every topic it names is a
        topic created since chaos began that this client has named in fewer than FRESH_REQUESTS
        requests of this API before (a request naming an older topic too is never answered so:
        the broker knows that one)."""
        topics = _named_topics(self.broker, api_key, request)
        if not topics or any(t is None for t in topics):
            return False  # an unknown topic is the handler's own answer
        fresh = True
        for topic in {t.topic_id: t for t in topics if t is not None}.values():
            if topic.topic_id in self.known_topics:
                fresh = False
                continue
            k = (client_id, api_key, topic.topic_id)
            seen = self.fresh_seen.get(k, 0)
            if seen >= FRESH_REQUESTS:
                fresh = False
            else:
                self.fresh_seen[k] = seen + 1
        return fresh

    def _unknown_topic(self, ctx: HookContext, request: Any, client_id: str, seq: int) -> Interception:
        """Answer as a broker that has not learnt the request's new topics from the metadata yet:
        UNKNOWN_TOPIC_OR_PARTITION, or UNKNOWN_TOPIC_ID for a request naming topics by id (Kafka's
        ReplicaManager and KafkaApis), without applying it."""
        api_key = ctx.header.api_key
        by_id = any(getattr(t, "topic_id", None) is not None and not getattr(t, "name", None)
                    for t in _request_topics(api_key, request))
        error = E.unknown_topic_id if by_id else E.unknown_topic_or_partition
        entry = self._entry(api_key, seq, client_id, "unknown_topic")
        entry["error"] = error.name.upper()
        entry["topics"] = sorted({t.name for t in _named_topics(self.broker, api_key, request) if t is not None})
        self.injected.append(entry)
        self.counts["unknown_topic"] += 1
        log.info("chaos unknown_topic on %s #%d from client %r (%s for new topic(s) %s)", api_key_map[api_key],
                 seq, client_id, entry["error"], ", ".join(entry["topics"]))
        return Interception(answer=lambda: self._answer(ctx, request, error))

    # --- moves: what Kafka's controller does when it elects another leader ----------------------
    def _move(self, ctx: HookContext, request: Any, pick: int) -> dict[str, Any] | None:
        """Move the leadership of a partition the request names, or of its group's or
        transactional id's coordinator partition, from the node the request came to (when that
        node leads it) to another in-sync replica that is up, chosen by `pick`: the leader epoch
        grows (broker.cluster.move_leader). Answers what moved, or None when nothing could."""
        cluster = self.broker.cluster
        node = ctx.node_id
        api_key = ctx.header.api_key
        named: dict[str, Any] = {}
        if api_key in _PARTITION_APIS:
            parts = [p for p in _request_partitions(self.broker, api_key, request) if p is not None]
        else:
            coordinator = self._coordinator_partition(api_key, request)
            if coordinator is None:
                return None
            named, part = coordinator
            parts = [part]
        choices = [(p, [n for n in p.isr if n != node and cluster.alive(n)]) for p in parts if p.leader == node]
        choices = [(p, others) for p, others in choices if others]
        if not choices:
            return None
        part, others = choices[pick % len(choices)]
        target = others[(pick >> 32) % len(others)]
        cluster.move_leader(part, target)
        return {**named, "topic": part.topic.name, "partition": part.index, "from_node": node,
                "to_node": target, "leader_epoch": part.leader_epoch}

    def _coordinator_partition(self, api_key: int, request: Any) -> tuple[dict[str, str], Partition] | None:
        """The group or transactional id the request is for, and its coordinator partition (None:
        the request names none, or several, or the internal topic cannot be created)."""
        services = self.broker.services
        try:
            if api_key in _GROUP_APIS:
                group = getattr(request, "group_id", None)
                groups = getattr(request, "groups", None)
                if group is None and groups and len(groups) == 1:  # OffsetFetch v8+
                    group = groups[0].group_id
                if not isinstance(group, str) or not group:
                    return None
                return {"group": group}, services.groups.offsets_partition(group)
            # AddPartitionsToTxn up to v3 (clients); v4+ carries many transactional ids (brokers)
            tid = getattr(request, "transactional_id", getattr(request, "v3_and_below_transactional_id", None))
            if not isinstance(tid, str) or not tid:
                return None  # InitProducerId of an idempotent producer; AddPartitionsToTxn from a broker
            return {"transactional_id": tid}, services.transactions.store.partition_of(tid)
        except OSError:
            return None

    @staticmethod
    def _fits(api_key: int, request: Any, error: ErrorCode) -> bool:
        """Whether Kafka could answer `error` to this request (see ERRORS)."""
        if error in _ACKS_ALL_ONLY:
            return getattr(request, "acks", -1) == -1
        if api_key == 22:
            return getattr(request, "transactional_id", None) is not None
        return True

    @staticmethod
    def _answer(ctx: HookContext, request: Any, error: ErrorCode | None) -> Any:
        from kafkalite.protocol.error_responses import error_response  # kio's schemas, on first use

        if error is None:
            raise CloseConnection(f"chaos closes the connection on {api_key_map[ctx.header.api_key]}")
        return error_response(ctx.header.api_key, ctx.header.api_version, request, error)

    def describe(self) -> dict[str, Any]:
        return {"enabled": True, "seed": self.seed, "profile": self.profile_name,
                "faults": sum(self.counts.values()), "by_fault": dict(self.counts),
                "requests": sum(self.api_seq.values())}


def _moved_text(moved: dict[str, Any]) -> str:
    what = (f"the coordinator of group {moved['group']!r} ({moved['topic']}-{moved['partition']})" if "group" in moved
            else f"the coordinator of transactional id {moved['transactional_id']!r} ({moved['topic']}-{moved['partition']})"
            if "transactional_id" in moved else f"the leader of {moved['topic']}-{moved['partition']}")
    return f"{what} moved from node {moved['from_node']} to node {moved['to_node']} (leader epoch {moved['leader_epoch']})"


def _request_topics(api_key: int, request: Any) -> list[Any]:
    """The topic entries of a Produce, Fetch or ListOffsets request."""
    return list((request.topic_data if api_key == 0 else request.topics) or ())


def _topic_of(broker: "Broker", entry: Any) -> "Topic | None":
    cluster = broker.cluster
    name = getattr(entry, "name", None) or getattr(entry, "topic", None)
    if name:
        return cluster.topics.get(name)
    return cluster.topics_by_id.get(getattr(entry, "topic_id", None))  # type: ignore[arg-type]


def _named_topics(broker: "Broker", api_key: int, request: Any) -> list["Topic | None"]:
    """The topics a Produce or ListOffsets request names (None for one that does not exist)."""
    return [_topic_of(broker, t) for t in _request_topics(api_key, request)]


def _request_partitions(broker: "Broker", api_key: int, request: Any) -> list["Partition | None"]:
    """The partitions a Produce, Fetch or ListOffsets request names, in its order (None for one
    that does not exist)."""
    out: list[Partition | None] = []
    for entry in _request_topics(api_key, request):
        topic = _topic_of(broker, entry)
        for p in (entry.partition_data if api_key == 0 else entry.partitions) or ():
            index = p.index if api_key == 0 else p.partition if api_key == 1 else p.partition_index
            out.append(topic.partitions[index] if topic is not None and 0 <= index < len(topic.partitions) else None)
    return out


def current(broker: "Broker") -> Chaos | None:
    """The broker's running chaos, found among its dispatch hooks (the one place that holds it)."""
    for _key, hook in broker.hooks.registered():
        if isinstance(hook, Chaos):
            return hook
    return None


def start(broker: "Broker", seed: int, profile: str = "default") -> Chaos:
    """Start chaos with `seed` (replacing any running one: counters and log begin anew)."""
    if profile not in PROFILES:
        raise ValueError(f"chaos profile must be one of {', '.join(PROFILES)}, not {profile!r}")
    stop(broker)
    engine = Chaos(broker, seed, profile)
    for api_key in ERRORS:
        if api_key in broker.api_ranges:
            broker.hooks.add(api_key, engine)
    log.info("chaos on: seed %d, profile %s", seed, profile)
    return engine


def stop(broker: "Broker") -> Chaos | None:
    """Stop the running chaos, if any; returns it (its log stays readable)."""
    engine = current(broker)
    if engine is None:
        return None
    for api_key in ERRORS:
        broker.hooks.remove(api_key, engine)
    log.info("chaos off: %d fault(s) injected", sum(engine.counts.values()))
    return engine


def parse_seed(text: str) -> int:
    """A chaos seed from the command line or the environment: an integer."""
    try:
        return int(str(text).strip())
    except ValueError:
        raise ValueError(f"chaos must be an integer seed, not {text!r}") from None
