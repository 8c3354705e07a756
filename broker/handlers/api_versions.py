"""ApiVersions (key 18), v0-v4.

Generated from the broker's API ranges (the API table, or its intersection with the Kafka
release imitated: broker.kafka_versions), so it lists what dispatch serves, less the telemetry
APIs unless client.telemetry.enable is set (Kafka serves them but advertises them only with a
client telemetry receiver configured). Produce is
advertised from v0 as Kafka 4.x does (older librdkafka turns compression off otherwise) but
v0-v2 are refused. From v3 it reports the supported and finalized features (broker.features,
which UpdateFeatures changes), among them `transaction.version` (KIP-890): clients use
transactions v2 (EndTxn v5 epoch bump, implicit partition registration) only when the finalized
level is 2. A request with a version we do not know is answered in the v0 format
with UNSUPPORTED_VERSION and, as Kafka does since KIP-511, only the ApiVersions key with our
range (see broker.connection): the client retries with a version we serve and so learns the
features too (franz-go takes a full key list as the final answer, and with it no features).
From v3 the client's software name and version must match Kafka's pattern (letters, digits,
'-' and '.', starting and ending with a letter or digit); otherwise the answer is
INVALID_REQUEST with no versions, as Kafka's.
"""

from __future__ import annotations

import re
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make, response_type

from ..context import RequestContext
from ..state import Broker
from . import api


def build(version: int, broker: Broker, error: ErrorCode = ErrorCode.none) -> Any:
    rt = response_type(18, version)
    mod = __import__(rt.__module__, fromlist=["ApiVersion"])
    keys = tuple(
        make(mod.ApiVersion, api_key=r.api_key, min_version=r.advertised_min_version, max_version=r.max_version)
        for r in sorted(broker.api_ranges.values(), key=lambda r: r.api_key)
        if (error != ErrorCode.unsupported_version or r.api_key == 18) and r.api_key not in broker.unadvertised
    )
    kwargs = dict(error_code=error, api_keys=keys, throttle_time=0)
    if version >= 3:
        features = broker.features
        # Kafka omits features whose minimum is 0 from v0-v3 responses (see the schema).
        kwargs["supported_features"] = tuple(
            make(mod.SupportedFeatureKey, name=n, min_version=lo, max_version=hi)
            for n, (lo, hi) in features.supported.items() if version >= 4 or lo > 0
        )
        kwargs["finalized_features_epoch"] = features.epoch
        kwargs["finalized_features"] = tuple(
            make(mod.FinalizedFeatureKey, name=n, max_version_level=level, min_version_level=level)
            for n, level in features.finalized().items()
        )
    return make(rt, **kwargs)


# ApiVersionsRequest.isValid in Kafka's clients
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


@api(18, 0, 4)
async def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    if version >= 3 and not (_SOFTWARE.fullmatch(request.client_software_name or "")
                             and _SOFTWARE.fullmatch(request.client_software_version or "")):
        return make(response_type(18, version), error_code=ErrorCode.invalid_request, api_keys=(),
                    throttle_time=0, supported_features=(), finalized_features_epoch=-1, finalized_features=())
    return build(version, ctx.broker)
