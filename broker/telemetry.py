"""Client telemetry (KIP-714): client-metrics subscriptions (config resources of type
CLIENT_METRICS), what GetTelemetrySubscriptions tells a client, the rules PushTelemetry is held to,
and the metrics clients pushed, kept for tests to read (the client-telemetry control).

Subscriptions
- A subscription is a named set of `metrics` (metric name prefixes; `*` all), `interval.ms`
  (100-3600000, 300000 by default) and `match` (`key=regex` on client_instance_id, client_id,
  client_source_address, client_source_port, client_software_name, client_software_version),
  validated with Kafka's ClientMetricsConfigs messages. Deleting every key deletes it. They persist
  in `__cluster_metadata/client_metrics.json`.

A client instance (its client_instance_id; the broker assigns one when it sends none)
- gets the union of the metrics of the subscriptions it matches (all patterns of a subscription
  must match; none: no metrics, as on Kafka: `[""]` means all), the shortest of their intervals
  (300000 without any), a subscription id that changes whenever that answer does, the compression
  types zstd, lz4, gzip, snappy, 1 MiB at most per push and delta temporality;
- asks again only after its push interval, else THROTTLING_QUOTA_EXCEEDED (unless its
  subscriptions changed meanwhile);
- pushes once at any time after a GetTelemetrySubscriptions, then at most once per interval
  (THROTTLING_QUOTA_EXCEEDED) unless the push is its last (terminating); a push needs its
  instance id (INVALID_REQUEST), the current subscription id (UNKNOWN_SUBSCRIPTION_ID), a known
  compression type (UNSUPPORTED_COMPRESSION_TYPE), at most telemetry_max_bytes
  (TELEMETRY_TOO_LARGE); after a terminating push every push is INVALID_REQUEST.
- Accepted pushes are kept (the last PUSHES_KEPT per instance), with the metric names read from
  the OTLP payload (MetricsData, decompressed).
- Subscriptions persist in `__cluster_metadata/client_metrics.json`, saved as they will be before
  memory changes: a save that fails (a full disk) raises OSError with them as they were
  (broker.all_or_nothing).
"""

from __future__ import annotations

import json
import re
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.storage.files import write_atomic

# GetTelemetrySubscriptions and PushTelemetry: served always, advertised only with
# client.telemetry.enable, as Kafka advertises them only when a telemetry receiver is configured
TELEMETRY_APIS = frozenset({71, 72})
KEYS = ("interval.ms", "match", "metrics")
MATCH_KEYS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
              "client_source_address", "client_source_port")
DEFAULT_INTERVAL_MS = 300_000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
TELEMETRY_MAX_BYTES = 1_048_576
# zstd, lz4, gzip, snappy: Kafka's preference order
ACCEPTED_COMPRESSION = (4, 3, 1, 2)
PUSHES_KEPT = 20


class TelemetryConfigError(Exception):
    def __init__(self, message: str, *, invalid_config: bool = False):
        super().__init__(message)
        self.message = message
        self.invalid_config = invalid_config


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def validate(props: dict[str, str]) -> None:
    """ClientMetricsConfigs.validate of a subscription's set."""
    for key in props:
        if key not in KEYS:
            raise TelemetryConfigError(f"Unknown client metrics configuration: {key}")
    if "interval.ms" in props:
        try:
            interval = int(props["interval.ms"])
        except ValueError:
            raise TelemetryConfigError(f"Invalid value {props['interval.ms']} for configuration interval.ms: "
                                       "Not a number of type INT") from None
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise TelemetryConfigError(f"Invalid value {interval} for interval.ms, interval must be between "
                                       f"{MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
    for pattern in _split(props.get("match", "")):
        key, sep, regex = pattern.partition("=")
        ok = bool(sep) and key in MATCH_KEYS
        if ok:
            try:
                re.compile(regex)
            except re.error:
                ok = False
        if not ok:
            raise TelemetryConfigError(f"Illegal client matching pattern: {pattern}", invalid_config=True)


@dataclass
class Instance:
    client_id: str
    source: tuple[str, str]
    subscription_id: int = 0
    metrics: tuple[str, ...] = ()
    interval_ms: int = DEFAULT_INTERVAL_MS
    last_get_ms: int = 0
    last_push_ms: int = 0
    terminating: bool = False
    pushes: list[dict[str, Any]] = field(default_factory=list)


class ClientTelemetry:
    def __init__(self, meta_dir: Path):
        self.path = meta_dir / "client_metrics.json"
        self.subscriptions: dict[str, dict[str, str]] = {}
        if self.path.exists():
            self.subscriptions = {k: dict(v) for k, v in json.loads(self.path.read_text()).items()}
        self.instances: dict[uuid.UUID, Instance] = {}

    # --- the CLIENT_METRICS config resource ------------------------------------------------

    def alter(self, name: str, props: dict[str, str], *, validate_only: bool) -> None:
        validate(props)
        if validate_only:
            return
        subscriptions = dict(self.subscriptions)
        if props:
            subscriptions[name] = dict(props)
        else:
            subscriptions.pop(name, None)
        # saved before memory changes: a write that fails raises OSError and changes nothing
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(subscriptions, sort_keys=True).encode(), fsync=True)
        self.subscriptions = subscriptions

    # --- GetTelemetrySubscriptions ---------------------------------------------------------

    def _matches(self, props: dict[str, str], attributes: dict[str, str]) -> bool:
        for pattern in _split(props.get("match", "")):
            key, _, regex = pattern.partition("=")
            if re.fullmatch(regex, attributes.get(key, "")) is None:
                return False
        return True

    def _answer(self, attributes: dict[str, str]) -> tuple[int, tuple[str, ...], int]:
        metrics: list[str] = []
        intervals = []
        for _name, props in sorted(self.subscriptions.items()):
            if not props.get("metrics") or not self._matches(props, attributes):
                continue
            for m in _split(props["metrics"]):
                if m not in metrics:
                    metrics.append(m)
            intervals.append(int(props.get("interval.ms", DEFAULT_INTERVAL_MS)))
        requested = ("",) if "*" in metrics else tuple(metrics)
        interval = min(intervals) if intervals else DEFAULT_INTERVAL_MS
        # Kafka's subscription id is a hash of what the client is asked for
        sub_id = zlib.crc32(json.dumps([requested, interval]).encode()) - 2**31
        return sub_id, requested, interval

    def get(self, instance_id: uuid.UUID | None, client_id: str, source: tuple[str, str],
            now: int) -> tuple[ErrorCode, uuid.UUID, Instance]:
        if instance_id is None or instance_id.int == 0:
            instance_id = uuid.uuid4()
        inst = self.instances.get(instance_id)
        attributes = {"client_instance_id": str(instance_id), "client_id": client_id,
                      "client_source_address": source[0], "client_source_port": source[1]}
        sub_id, metrics, interval = self._answer(attributes)
        if inst is None or inst.subscription_id != sub_id:
            inst = Instance(client_id, source, sub_id, metrics, interval)
            self.instances[instance_id] = inst
        elif now - max(inst.last_get_ms, inst.last_push_ms) < inst.interval_ms:
            return ErrorCode.throttling_quota_exceeded, instance_id, inst
        inst.last_get_ms = now
        return ErrorCode.none, instance_id, inst

    # --- PushTelemetry ---------------------------------------------------------------------

    def push(self, instance_id: uuid.UUID | None, subscription_id: int, terminating: bool, compression: int,
             payload: bytes, now: int) -> ErrorCode:
        if instance_id is None or instance_id.int == 0:
            return ErrorCode.invalid_request
        inst = self.instances.get(instance_id)
        if inst is None:
            return ErrorCode.unknown_subscription_id
        if inst.terminating:
            return ErrorCode.invalid_request
        # ClientMetricsInstance.maybeUpdatePushRequestTimestamp: one push at any time after a get
        accept = inst.last_get_ms > inst.last_push_ms or now - max(inst.last_get_ms, inst.last_push_ms) >= inst.interval_ms
        if accept:
            inst.last_push_ms = now
        elif not terminating:
            return ErrorCode.throttling_quota_exceeded
        if subscription_id != inst.subscription_id:
            return ErrorCode.unknown_subscription_id
        if compression != 0 and compression not in ACCEPTED_COMPRESSION:
            return ErrorCode.unsupported_compression_type
        if len(payload) > TELEMETRY_MAX_BYTES:
            return ErrorCode.telemetry_too_large
        if terminating:
            inst.terminating = True
        inst.pushes.append({"time_ms": now, "terminating": terminating, "bytes": len(payload),
                            "metrics": metric_names(compression, payload)})
        del inst.pushes[:-PUSHES_KEPT]
        return ErrorCode.none


# --- reading OTLP MetricsData without its generated classes ---------------------------------


def _fields(data: bytes):
    """(field number, wire type, value) of one protobuf message; length-delimited values as bytes."""
    i, n = 0, len(data)

    def varint() -> int:
        nonlocal i
        shift = value = 0
        while True:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
    while i < n:
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, varint()
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            length = varint()
            yield number, wire, data[i:i + length]
            i += length
        else:
            raise ValueError("unsupported protobuf wire type")


def metric_names(compression: int, payload: bytes) -> list[str] | None:
    """The names of the metrics in an OTLP MetricsData (resource_metrics=1 > scope_metrics=2 >
    metrics=2 > name=1), or None when the payload cannot be read."""
    try:
        from kafkalite.protocol.codecs import decompress

        data = decompress(compression, payload) if compression else payload
        names = []
        for f1, w1, rm in _fields(data):
            if f1 != 1 or w1 != 2:
                continue
            for f2, w2, sm in _fields(rm):
                if f2 != 2 or w2 != 2:
                    continue
                for f3, w3, metric in _fields(sm):
                    if f3 != 2 or w3 != 2:
                        continue
                    for f4, w4, name in _fields(metric):
                        if f4 == 1 and w4 == 2:
                            names.append(name.decode("utf-8", "replace"))
        return sorted(set(names))
    except Exception:  # noqa: BLE001 - a payload we cannot read is kept without names
        return None
