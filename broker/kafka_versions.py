"""The Kafka release a broker imitates (`kafkalite --kafka-version 3.9`, KAFKALITE_KAFKA_VERSION).

Without it the broker advertises every version it serves (the API table, protocol.apis) and the
features of the newest Kafka it follows. With it, ApiVersions advertises that release's ranges
intersected with ours and that release's supported and finalized features, and a request above
the advertised range is refused as that release refuses it (the connection is closed; ApiVersions
gets UNSUPPORTED_VERSION in the v0 format). Features drive behaviour as on that release:

- `transaction.version` (0 before 4.0): the transaction coordinator runs transactions v1 (no
  epoch bump per transaction, AddPartitionsToTxn before each new partition), and clients take
  that path because the feature is not finalized;
- `group.version` (0 before 4.0): ConsumerGroupHeartbeat and ConsumerGroupDescribe, advertised
  from 3.7, are answered with UNSUPPORTED_VERSION, as a 3.x broker whose
  group.coordinator.rebalance.protocols is the default (classic) answers them.

The ranges and features per release are facts in kafka_releases.json (see its "about").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.apis import API_TABLE, ApiRange

DATA = Path(__file__).resolve().parent / "kafka_releases.json"


@dataclass(frozen=True)
class KafkaRelease:
    name: str
    apis: dict[int, tuple[int, int]]
    supported_features: dict[str, tuple[int, int]]
    finalized_features: dict[str, int]

    def feature(self, name: str) -> int:
        """A finalized feature's level (0 when not finalized)."""
        return self.finalized_features.get(name, 0)

    def api_ranges(self) -> dict[int, ApiRange]:
        """Our API table cut down to what this release advertises."""
        out: dict[int, ApiRange] = {}
        for key, ours in API_TABLE.items():
            theirs = self.apis.get(key)
            if theirs is None:
                continue
            lo, hi = max(ours.min_version, theirs[0]), min(ours.max_version, theirs[1])
            if lo > hi:
                continue
            advertised_min = ours.advertised_min
            if advertised_min is not None and key != ApiKey.PRODUCE:
                advertised_min = max(advertised_min, theirs[0])
            out[key] = replace(ours, min_version=lo, max_version=hi, advertised_min=advertised_min)
        return out


class _ImitatingBroker(Protocol):
    @property
    def release(self) -> KafkaRelease | None: ...


class _Header(Protocol):
    @property
    def api_key(self) -> int: ...


class ReleaseContext(Protocol):
    """What `unsupported_group_api` reads of a request: broker.context.RequestContext is one (a
    Protocol, so this module need not import the context, which imports the state, which imports
    this)."""

    @property
    def broker(self) -> _ImitatingBroker: ...

    @property
    def header(self) -> _Header: ...

    @property
    def api_version(self) -> int: ...


def unsupported_group_api(ctx: ReleaseContext, request: Any) -> Any:
    """The answer of a release without group.version (every 3.x) to ConsumerGroupHeartbeat and
    ConsumerGroupDescribe, or None when the broker serves them."""
    release = ctx.broker.release
    if release is None or release.feature("group.version") >= 1:
        return None
    from kio.schema.errors import ErrorCode

    from kafkalite.protocol.error_responses import error_response

    return error_response(ctx.header.api_key, ctx.api_version, request, ErrorCode.unsupported_version,
                          "The version of API is not supported.")


@lru_cache(maxsize=None)
def _table() -> dict[str, dict]:
    with open(DATA) as f:
        return json.load(f)["releases"]


def releases() -> list[str]:
    return sorted(_table(), key=lambda r: tuple(int(x) for x in r.split(".")))


def release(name: str) -> KafkaRelease:
    """`3.9`, `3.9.1` or `3.9.0` -> the 3.9 release; ValueError for one we have no facts for."""
    parts = name.strip().split(".")
    short = ".".join(parts[:2])
    table = _table()
    if len(parts) < 2 or short not in table or not all(p.isdigit() for p in parts):
        raise ValueError(f"--kafka-version must be one of {', '.join(releases())} (a patch release such as "
                         f"3.9.1 counts as its minor), not {name!r}")
    data = table[short]
    return KafkaRelease(
        name=short,
        apis={int(k): (v[0], v[1]) for k, v in data["apis"].items()},
        supported_features={k: (v[0], v[1]) for k, v in data["supported_features"].items()},
        finalized_features=dict(data["finalized_features"]),
    )
