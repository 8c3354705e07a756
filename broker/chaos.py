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
- Replay: whether a request is faulted, and how, is a pure function of (seed, client id, API key,
  api_seq), api_seq being the request's number among that client id's requests of that API since
  chaos began (`draw`). Never wall time: the same seed and the same requests give the same faults.
- A request right after a faulted one of the same client and API is never faulted (the draw of
  seq-1 is consulted, still a pure function), so a retry always gets through and every client
  makes progress whatever the seed.
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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kio.index import api_key_map
from kio.schema.errors import ErrorCode

from .handlers.common import CloseConnection
from .hooks import HookContext, Interception

if TYPE_CHECKING:
    from .state import Broker

log = logging.getLogger("kafkalite.chaos")

E = ErrorCode
_COORDINATOR = (E.coordinator_load_in_progress, E.not_coordinator)
_TXN_COORDINATOR = (E.coordinator_load_in_progress, E.not_coordinator, E.concurrent_transactions)

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
    12: _COORDINATOR,  # Heartbeat
    14: _COORDINATOR,  # SyncGroup
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
FAULTS = ("error", "drop", "delay", "close")


@dataclass(frozen=True)
class Profile:
    """How often each kind of fault hits a request (probabilities per request), and the longest delay."""

    error: float
    close: float
    drop: float
    delay: float
    delay_ms_max: int


PROFILES: dict[str, Profile] = {
    "gentle": Profile(error=0.02, close=0.005, drop=0.002, delay=0.03, delay_ms_max=200),
    "default": Profile(error=0.06, close=0.015, drop=0.005, delay=0.06, delay_ms_max=500),
    "harsh": Profile(error=0.15, close=0.04, drop=0.015, delay=0.12, delay_ms_max=1000),
}


@dataclass(frozen=True)
class Draw:
    """The fault one request gets (None: none): a kind, and an error index or a delay."""

    fault: str | None
    pick: int  # which of the API's errors, or the delay in ms


def _uniform(seed: int, client_id: str, api_key: int, api_seq: int) -> tuple[float, int]:
    digest = hashlib.blake2b(f"{seed}\x00{client_id}\x00{api_key}\x00{api_seq}".encode(), digest_size=16).digest()
    return int.from_bytes(digest[:8], "big") / 2**64, int.from_bytes(digest[8:], "big")


def _raw(seed: int, profile: Profile, client_id: str, api_key: int, api_seq: int) -> Draw:
    u, bits = _uniform(seed, client_id, api_key, api_seq)
    errors = ERRORS.get(api_key, ())
    edge = 0.0
    for kind, rate in (("error", profile.error if errors else 0.0), ("close", profile.close),
                       ("drop", profile.drop if api_key in _DROPPABLE else 0.0), ("delay", profile.delay)):
        edge += rate
        if u < edge:
            if kind == "error":
                return Draw(kind, bits % len(errors))
            if kind == "delay":
                return Draw(kind, 1 + bits % profile.delay_ms_max)
            return Draw(kind, 0)
    return Draw(None, 0)


def draw(seed: int, profile: Profile, client_id: str, api_key: int, api_seq: int) -> Draw:
    """The fault of request number `api_seq` (from 0) of `api_key` from `client_id`: a pure function
    of its arguments. A request right after a faulted one is never faulted."""
    if api_seq > 0 and _raw(seed, profile, client_id, api_key, api_seq - 1).fault is not None:
        return Draw(None, 0)
    return _raw(seed, profile, client_id, api_key, api_seq)


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

    def __call__(self, ctx: HookContext, request: Any) -> Interception | None:
        """The dispatch hook: count the request and fault it when the schedule says so."""
        api_key = ctx.header.api_key
        client_id = ctx.client_id or ""
        key = (client_id, api_key)
        seq = self.api_seq.get(key, 0)
        self.api_seq[key] = seq + 1
        if api_key == 0 and getattr(request, "acks", -1) == 0:
            return None  # acks=0: no response to fault, and a close would lose what Kafka keeps
        chosen = draw(self.seed, self.profile, client_id, api_key, seq)
        if chosen.fault is None:
            return None
        error: ErrorCode | None = None
        if chosen.fault == "error":
            error = ERRORS[api_key][chosen.pick]
            if not self._fits(api_key, request, error):
                return None
        entry = {"api": api_key_map[api_key], "api_key": api_key, "api_seq": seq, "client_id": client_id,
                 "fault": chosen.fault, "time_ms": int(time.time() * 1000)}
        if error is not None:
            entry["error"] = error.name.upper()
        if chosen.fault == "delay":
            entry["delay_ms"] = chosen.pick
        self.injected.append(entry)
        self.counts[chosen.fault] += 1
        log.info("chaos %s on %s #%d from client %r%s", chosen.fault, api_key_map[api_key], seq, client_id,
                 f" ({entry['error']})" if error is not None else "")
        if chosen.fault == "drop":
            return Interception(drop=True)
        if chosen.fault == "delay":
            return Interception(delay_ms=chosen.pick)
        return Interception(answer=lambda: self._answer(ctx, request, error))

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
