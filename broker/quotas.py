"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-599): the values AlterClientQuotas sets,
what DescribeClientQuotas reports, and the throttle time Kafka's ClientQuotaManager computes.

Values
- A quota entity is a map of entity type (`user`, `client-id`, `ip`) to a name, None being the
  type's default (`--entity-default`). The keys are Kafka's QuotaConfigs: `producer_byte_rate`
  and `consumer_byte_rate` (LONG), `request_percentage` and `controller_mutation_rate` (DOUBLE)
  for user and client-id entities, `connection_creation_rate` (INT) for ip entities.
- Alterations are validated as Kafka's ClientQuotaControlManager validates them, with its
  messages (INVALID_REQUEST); values persist in `__cluster_metadata/client_quotas.json` (Kafka
  keeps them in its metadata log). Describe filters as ClientQuotasImage.describe does.

Enforcement (ClientQuotaManager with its DefaultQuotaCallback)
- Each quota type (produce, fetch, request, controller mutation) resolves a client's quota by
  Kafka's precedence: user+client-id, user+default client-id, user, default user+client-id,
  default user+default client-id, default user, client-id, default client-id. The matched level
  decides the sensor's tags, so clients that share a user-level quota share one rate.
- A sensor is Kafka's Rate over quota.window.num (11) samples of quota.window.size.seconds (1 s);
  recording a value that takes the rate above the bound gives the throttle time
  `(rate - bound) / bound * window` ms (QuotaUtils.throttleTime); the request quota caps it at
  one window (ClientRequestQuotaManager). broker.throttling applies it to requests.
- `controller_mutation_rate` (ControllerMutationQuotaManager) counts partitions created by
  CreateTopics and CreatePartitions and deleted by DeleteTopics, one record per topic, in a
  TokenBucket: it holds at most a burst of rate x controller.quota.window.num (11) x
  controller.quota.window.size.seconds (1 s) tokens, refills at the rate, starts full and may go
  into debt. A strict quota (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) refuses a
  topic only when the bucket is already in debt before it (THROTTLING_QUOTA_EXCEEDED, the time
  until the debt is paid, `-tokens / rate` s, as the throttle time), so the topic that takes it
  into debt passes unthrottled; a permissive one (older versions) takes every topic and
  throttles once the bucket is in debt. broker.handlers.admin_topics records; the throttle goes
  out the way of the other quotas (broker.throttling).
- `throttle-client` (broker.controls.quotas) arms forced throttles, matched by client id and/or
  user, that set a throttle time on the next responses regardless of any quota.
- All or nothing: AlterClientQuotas saves the quotas as they will be before memory changes; a
  save that fails (a full disk) answers each entity it was for KAFKA_STORAGE_ERROR and changes
  nothing (broker.all_or_nothing).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from kio.schema.errors import ErrorCode

from kafkalite.storage.files import write_atomic

from .all_or_nothing import storage_error_message
from .java_text import hash_order

log = logging.getLogger("kafkalite.quotas")

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
# QuotaConfigs.userConfigs / clientConfigs / ipConfigs: key -> ConfigDef type
CLIENT_KEYS = {PRODUCER_BYTE_RATE: "LONG", CONSUMER_BYTE_RATE: "LONG", REQUEST_PERCENTAGE: "DOUBLE",
               CONTROLLER_MUTATION_RATE: "DOUBLE"}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}
# the quota types the broker enforces, by the key that sets each
PRODUCE, FETCH, REQUEST, CONTROLLER_MUTATION = "Produce", "Fetch", "Request", "ControllerMutation"
QUOTA_TYPE_KEYS = {PRODUCE: PRODUCER_BYTE_RATE, FETCH: CONSUMER_BYTE_RATE, REQUEST: REQUEST_PERCENTAGE,
                   CONTROLLER_MUTATION: CONTROLLER_MUTATION_RATE}

# ClientQuotaControlManager.validateQuotaKeyValue: the integral types' upper bounds
_INTEGRAL_LIMITS = {"SHORT": (32767.0, "a"), "INT": (2147483647.0, "an"), "LONG": (9.223372036854776e18, "a")}

WINDOW_MS = 1000   # quota.window.size.seconds
SAMPLES = 11       # quota.window.num
CONTROLLER_WINDOW_MS = 1000   # controller.quota.window.size.seconds
CONTROLLER_SAMPLES = 11       # controller.quota.window.num
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple[tuple[str, "str | None"], ...]  # sorted (type, name) pairs; name None: the default


def user_of(principal: str) -> str:
    """The quota's user of a principal (`User:alice` -> `alice`)."""
    return principal.split(":", 1)[1] if ":" in principal else principal


def java_round(value: float) -> int:
    """Math.round: halves up."""
    return math.floor(value + 0.5)


class QuotaError(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def entity_text(entity: dict[str, str | None]) -> str:
    """ClientQuotaEntity.toString: its entries as a Java HashMap prints them."""
    order = hash_order(entity)
    return "ClientQuotaEntity(entries={" + ", ".join(
        f"{k}={'null' if entity[k] is None else entity[k]}" for k in order) + "})"


def _valid_ip_entity(name: str | None) -> bool:
    """ClientQuotaControlManager.isValidIpEntity resolves the name; only literal addresses and
    localhost are taken here, without a lookup on the broker's loop."""
    if name is None or name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


# --- Kafka's Rate (SampledStat of WindowedSum samples) ----------------------------------------


class _Sample:
    __slots__ = ("value", "last_window_ms")

    def __init__(self, now: int):
        self.value = 0.0
        self.last_window_ms = now

    def reset(self, now: int) -> None:
        self.value = 0.0
        self.last_window_ms = now


class Rate:
    """org.apache.kafka.common.metrics.stats.Rate with a WindowedSum, in seconds."""

    __slots__ = ("samples", "current")

    def __init__(self) -> None:
        self.samples: list[_Sample] = []
        self.current = 0

    def record(self, value: float, now: int) -> None:
        if not self.samples:
            self.samples.append(_Sample(now))
        sample = self.samples[self.current]
        if now - sample.last_window_ms >= WINDOW_MS:
            self.current = (self.current + 1) % SAMPLES
            if self.current >= len(self.samples):
                self.samples.append(_Sample(now))
            else:
                self.samples[self.current].reset(now)
            sample = self.samples[self.current]
        sample.value += value

    def _purge(self, now: int) -> None:
        for s in self.samples:
            if now - s.last_window_ms >= SAMPLES * WINDOW_MS:
                s.reset(now)

    def window_ms(self, now: int) -> int:
        """Rate.windowSize: the elapsed time over the samples, at least SAMPLES - 1 windows."""
        self._purge(now)
        if not self.samples:
            self.samples.append(_Sample(now))
        elapsed = now - min(s.last_window_ms for s in self.samples)
        full = elapsed // WINDOW_MS
        if full < SAMPLES - 1:
            elapsed += (SAMPLES - 1 - full) * WINDOW_MS
        return elapsed

    def measure(self, now: int) -> float:
        window = self.window_ms(now)
        return sum(s.value for s in self.samples) / (window / 1000.0)


class TokenBucket:
    """org.apache.kafka.common.metrics.stats.TokenBucket, in seconds: `tokens` refill at the
    quota's rate up to the burst; a record takes them, into debt if need be. Like Kafka's, it
    starts empty at time 0, so the first look fills it."""

    __slots__ = ("tokens", "last_update_ms")

    def __init__(self) -> None:
        self.tokens = 0.0
        self.last_update_ms = 0

    @staticmethod
    def burst(bound: float) -> float:
        return CONTROLLER_SAMPLES * (CONTROLLER_WINDOW_MS / 1000) * bound

    def _refill(self, bound: float, now: int) -> None:
        self.tokens = min(self.burst(bound), self.tokens + bound * (now - self.last_update_ms) / 1000)
        self.last_update_ms = now

    def measure(self, bound: float, now: int) -> float:
        self._refill(bound, now)
        return self.tokens

    def record(self, value: float, bound: float, now: int) -> None:
        self._refill(bound, now)
        self.tokens = min(self.burst(bound), self.tokens - value)


class ThrottlingQuotaExceeded(Exception):
    """A strict controller mutation quota refused a topic (THROTTLING_QUOTA_EXCEEDED)."""

    def __init__(self, throttle_ms: int):
        super().__init__("The throttling quota has been exceeded.")
        self.throttle_ms = throttle_ms


class ControllerMutationQuota:
    """Kafka's Strict/PermissiveControllerMutationQuota: one request's view of its client's
    bucket. `record` counts one topic's partitions; `throttle_time` is the throttle its answer
    carries, less the time since it was computed (AbstractControllerMutationQuota)."""

    def __init__(self, bucket: TokenBucket, bound: float, strict: bool, clock: Callable[[], int]):
        self.bucket = bucket
        self.bound = bound
        self.strict = strict
        self.clock = clock
        self.last_throttle_ms = 0
        self.last_recorded_ms = 0

    def _debt_throttle(self, tokens: float, now: int) -> None:
        """ControllerMutationQuotaManager.throttleTimeMs: the time until the debt is paid."""
        self.last_throttle_ms = java_round(-tokens / self.bound * 1000)
        self.last_recorded_ms = now

    def record(self, permits: int) -> None:
        """Raises ThrottlingQuotaExceeded when a strict quota refuses the permits."""
        now = self.clock()
        if self.strict:
            tokens = self.bucket.measure(self.bound, now)
            if tokens < 0:  # Sensor.checkQuotas before the record
                self._debt_throttle(tokens, now)
                raise ThrottlingQuotaExceeded(self.last_throttle_ms)
            self.bucket.record(permits, self.bound, now)
        else:
            self.bucket.record(permits, self.bound, now)
            tokens = self.bucket.measure(self.bound, now)
            if tokens < 0:  # Sensor.checkQuotas after the record
                self._debt_throttle(tokens, now)

    def throttle_time(self) -> int:
        if self.last_throttle_ms == 0:
            return 0
        return max(0, min(self.last_throttle_ms - (self.clock() - self.last_recorded_ms), 2**31 - 1))


# --- the store and the enforcement ----------------------------------------------------------


@dataclass
class ForcedThrottle:
    id: int
    throttle_ms: int
    remaining: int | None  # None: until cleared
    client_id: str | None
    user: str | None
    hits: int = 0

    def matches(self, user: str, client_id: str | None) -> bool:
        return (self.client_id is None or self.client_id == client_id) and (self.user is None or self.user == user)


class ClientQuotas:
    def __init__(self, meta_dir: Path):
        self.path = meta_dir / "client_quotas.json"
        self.values: dict[Entity, dict[str, float]] = {}
        if self.path.exists():
            for row in json.loads(self.path.read_text()):
                self.values[_key(dict(row["entity"]))] = dict(row["values"])
        self._sensors: dict[tuple[str, str, str], Rate] = {}
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self.forced: list[ForcedThrottle] = []
        self._forced_ids = 0

    @property
    def enforcing(self) -> bool:
        """Whether any request may be throttled (a quota is set or a throttle is armed)."""
        return bool(self.values) or bool(self.forced)

    # --- DescribeClientQuotas -------------------------------------------------------------

    def describe(self, components: Iterable, strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """ClientQuotasImage.describe: the entities matching the filter components."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for c in components:
            etype = c.entity_type
            if etype == "":
                raise QuotaError(ErrorCode.invalid_request, "Invalid empty entity type.")
            if etype in exact or etype in typed:
                raise QuotaError(ErrorCode.invalid_request,
                                 f"Entity type {etype} cannot appear more than once in the filter.")
            if etype not in (IP, USER, CLIENT_ID):
                raise QuotaError(ErrorCode.unsupported_version, f"Unsupported entity type {etype}")
            if c.match_type == MATCH_EXACT:
                if c.match is None:
                    raise QuotaError(ErrorCode.invalid_request,
                                     "Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[etype] = c.match
            elif c.match_type == MATCH_DEFAULT:
                if c.match is not None:
                    raise QuotaError(ErrorCode.invalid_request,
                                     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[etype] = None
            elif c.match_type == MATCH_SPECIFIED:
                if c.match is not None:
                    raise QuotaError(ErrorCode.invalid_request,
                                     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
                typed.add(etype)
            else:
                raise QuotaError(ErrorCode.invalid_request, f"Unknown match type {c.match_type}")
        if (IP in exact or IP in typed) and ({USER, CLIENT_ID} & (set(exact) | typed)):
            raise QuotaError(ErrorCode.invalid_request, "Invalid entity filter component combination. IP filter "
                             "component should not be used with user or clientId filter component.")
        if not exact and not typed and strict:
            return []
        out = []
        for entity, values in self.values.items():
            names = dict(entity)
            if any(t not in names or names[t] != n for t, n in exact.items()):
                continue
            if any(t not in names for t in typed):
                continue
            if strict and len(names) != len(exact) + len(typed):
                continue
            out.append((entity, dict(values)))
        return out

    # --- AlterClientQuotas ----------------------------------------------------------------

    def alter(self, entries: list[tuple[dict[str, str | None], list[tuple[str, float | None]]]],
              validate_only: bool) -> list[tuple[dict[str, str | None], ErrorCode, str | None]]:
        """ClientQuotaControlManager.alterClientQuotas: one result per distinct entity, in the
        order each entity first appears; changes of entities without an error are applied."""
        results: dict[Entity, tuple[dict[str, str | None], ErrorCode, str | None]] = {}
        changes: list[tuple[Entity, str, float | None]] = []
        for entity, ops in entries:
            key = _key(entity)
            alterations: dict[str, float | None] = {}
            duplicate = None
            for op_key, value in ops:
                if op_key in alterations:
                    duplicate = (f"Duplicate quota key {op_key} not updating quota for this entity "
                                 f"{entity_text(entity)}")
                else:
                    alterations[op_key] = value
            if duplicate is not None:
                results[key] = (entity, ErrorCode.invalid_request, duplicate)
            if key in results:
                results[key] = (entity, ErrorCode.invalid_request, f"Ignoring duplicate entity {entity_text(entity)}")
                continue
            error = self._alteration_error(entity, alterations)
            if error is not None:
                results[key] = (entity, ErrorCode.invalid_request, error)
                continue
            changes.extend((key, k, v) for k, v in alterations.items())
            results[key] = (entity, ErrorCode.none, None)
        if not validate_only:
            # all or nothing: the quotas as they will be are saved before memory changes; a save
            # that fails (a full disk) answers each of these entities KAFKA_STORAGE_ERROR
            values = {entity: dict(quotas) for entity, quotas in self.values.items()}
            applied = set()
            for key, k, v in changes:
                if results[key][1] != ErrorCode.none:
                    continue
                mine = values.setdefault(key, {})
                if v is None:
                    mine.pop(k, None)
                else:
                    mine[k] = v
                if not mine:
                    del values[key]
                applied.add(key)
            if applied:
                try:
                    self._save(values)
                except OSError as exc:
                    log.error("saving client quotas failed: %s", exc)
                    for key in applied:
                        results[key] = (results[key][0], ErrorCode.kafka_storage_error, storage_error_message(exc))
                else:
                    self.values = values
                    log.info("client quotas now %s", self.values)
        return list(results.values())

    @staticmethod
    def _alteration_error(entity: dict[str, str | None], alterations: dict[str, float | None]) -> str | None:
        if not entity:
            return "Invalid empty client quota entity"
        for etype, name in entity.items():
            if etype not in (USER, CLIENT_ID, IP):
                return f"Unhandled client quota entity type: {etype}"
            if name is not None and name == "":
                return f"Empty {etype} not supported"
        if IP in entity:
            if len(entity) > 1:
                return "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
            if not _valid_ip_entity(entity[IP]):
                return f"{entity[IP]} is not a valid IP or resolvable host."
            keys = IP_KEYS
        else:
            keys = CLIENT_KEYS
        for k, v in alterations.items():
            if v is None:
                continue
            ctype = keys.get(k)
            if ctype is None:
                return f"Invalid configuration key {k}"
            if not math.isfinite(v):
                return f"Quota {k} must be a finite number"
            if v <= 0:
                return f"Quota {k} must be greater than 0"
            limit = _INTEGRAL_LIMITS.get(ctype)
            if limit is not None:
                bound, article = limit
                if v > bound:
                    return f"Proposed value for {k} is too large for {article} {ctype}."
                if abs(math.fmod(v, 1.0)) > 1e-6:
                    return f"{k} cannot be a fractional value."
            elif ctype != "DOUBLE":
                return f"Unexpected config type {ctype} should be Long or Double"
        return None

    def _save(self, quotas: dict[Entity, dict[str, float]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rows = [{"entity": [list(p) for p in entity], "values": values} for entity, values in quotas.items()]
        write_atomic(self.path, json.dumps(rows, sort_keys=True).encode(), fsync=True)

    # --- enforcement ----------------------------------------------------------------------

    def _quota(self, key: str, entity: dict[str, str | None]) -> float | None:
        return self.values.get(_key(entity), {}).get(key)

    def metric_tags(self, quota_type: str, user: str, client_id: str) -> tuple[str, str]:
        """DefaultQuotaCallback.quotaMetricTags: the (user, client-id) tags of the sensor."""
        key = QUOTA_TYPE_KEYS[quota_type]
        levels: list[tuple[dict[str, str | None], tuple[str, str]]] = [
                  ({USER: user, CLIENT_ID: client_id}, (user, client_id)),
                  ({USER: user, CLIENT_ID: None}, (user, client_id)),
                  ({USER: user}, (user, "")),
                  ({USER: None, CLIENT_ID: client_id}, (user, client_id)),
                  ({USER: None, CLIENT_ID: None}, (user, client_id)),
                  ({USER: None}, (user, ""))]
        for entity, tags in levels:
            if self._quota(key, entity) is not None:
                return tags
        return "", client_id

    def quota_limit(self, quota_type: str, tags: tuple[str, str]) -> float | None:
        """DefaultQuotaCallback.quotaLimit for a sensor's tags."""
        key = QUOTA_TYPE_KEYS[quota_type]
        user, client_id = tags
        if user and client_id:
            chain: list[dict[str, str | None]] = [{USER: user, CLIENT_ID: client_id}, {USER: user, CLIENT_ID: None},
                                                  {USER: None, CLIENT_ID: client_id}, {USER: None, CLIENT_ID: None}]
        elif user:
            chain = [{USER: user}, {USER: None}]
        elif client_id:
            chain = [{CLIENT_ID: client_id}, {CLIENT_ID: None}]
        else:
            return None
        for entity in chain:
            q = self._quota(key, entity)
            if q is not None:
                return q
        return None

    def _has_type(self, quota_type: str) -> bool:
        key = QUOTA_TYPE_KEYS[quota_type]
        return any(key in values for values in self.values.values())

    def record(self, quota_type: str, user: str, client_id: str, value: float, now: int) -> int:
        """recordAndGetThrottleTimeMs: record `value` and answer the throttle time (0 within quota);
        the request quota's is at most one window (ClientRequestQuotaManager)."""
        if not self._has_type(quota_type):
            return 0
        tags = self.metric_tags(quota_type, user, client_id)
        rate = self._sensors.setdefault((quota_type, *tags), Rate())
        rate.record(value, now)
        bound = self.quota_limit(quota_type, tags)
        if bound is None:
            return 0
        measured = rate.measure(now)
        if measured <= bound:
            return 0
        # QuotaUtils.throttleTime: Math.round, as the controller mutation quota's
        throttle = java_round((measured - bound) / bound * rate.window_ms(now)) if bound > 0 else 2**31 - 1
        if quota_type == REQUEST:
            throttle = min(throttle, WINDOW_MS)
        return int(min(throttle, 2**31 - 1))

    def unrecord(self, quota_type: str, user: str, client_id: str, value: float, now: int) -> None:
        """unrecordQuotaSensor: take back a value recorded for a response that was not sent."""
        if not self._has_type(quota_type):
            return
        tags = self.metric_tags(quota_type, user, client_id)
        rate = self._sensors.get((quota_type, *tags))
        if rate is not None:
            rate.record(-value, now)

    def controller_mutation_quota(self, principal: str, client_id: str, strict: bool,
                                  clock: Callable[[], int]) -> ControllerMutationQuota | None:
        """ControllerMutationQuotaManager.newQuotaFor: the quota of one CreateTopics,
        CreatePartitions or DeleteTopics, or None while the client has no controller_mutation_rate."""
        if not self._has_type(CONTROLLER_MUTATION):
            return None
        user = user_of(principal)
        tags = self.metric_tags(CONTROLLER_MUTATION, user, client_id)
        bound = self.quota_limit(CONTROLLER_MUTATION, tags)
        if bound is None:
            return None
        bucket = self._buckets.setdefault(tags, TokenBucket())
        return ControllerMutationQuota(bucket, bound, strict, clock)

    # --- forced throttles (the throttle-client control) -----------------------------------

    def force(self, throttle_ms: int, count: int | None, client_id: str | None, user: str | None) -> ForcedThrottle:
        self._forced_ids += 1
        forced = ForcedThrottle(self._forced_ids, throttle_ms, count, client_id, user)
        self.forced.append(forced)
        return forced

    def take_forced(self, user: str, client_id: str | None) -> int:
        for f in self.forced:
            if f.matches(user, client_id):
                f.hits += 1
                if f.remaining is not None:
                    f.remaining -= 1
                    if f.remaining <= 0:
                        self.forced.remove(f)
                return f.throttle_ms
        return 0


def _key(entity: dict[str, str | None]) -> Entity:
    return tuple(sorted(entity.items(), key=lambda kv: kv[0]))
