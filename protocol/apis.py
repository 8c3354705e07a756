"""The one table of the APIs we serve: api key -> version range.

ApiVersions is generated from this table and dispatch refuses anything outside it, so the two
can never disagree. Ranges follow Kafka 4.2's message schemas (as generated into kio), with
floors low enough for the clients still in use (kafka-python, kafkajs, Spark's bundled 3.x).
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.index import api_key_map


@dataclass(frozen=True, slots=True)
class ApiRange:
    api_key: int
    name: str
    min_version: int
    max_version: int
    # Kafka 4.x advertises Produce from v0 although it refuses v0-v2 (KAFKA-18659): older
    # librdkafka disables every compression codec when Produce v0 is not advertised.
    advertised_min: int | None = None

    @property
    def advertised_min_version(self) -> int:
        return self.min_version if self.advertised_min is None else self.advertised_min

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


def _range(api_key: int, lo: int, hi: int, advertised_min: int | None = None) -> ApiRange:
    return ApiRange(api_key, api_key_map[api_key], lo, hi, advertised_min)


# Filled in by the handler families as they are registered (see broker.handlers): only APIs
# that have a handler appear here, so nothing is advertised that is not served.
API_TABLE: dict[int, ApiRange] = {}


def register(api_key: int, lo: int, hi: int, *, advertised_min: int | None = None) -> ApiRange:
    if api_key in API_TABLE:
        raise ValueError(f"API {api_key} registered twice")
    rng = _range(api_key, lo, hi, advertised_min)
    API_TABLE[api_key] = rng
    return rng
