"""Request handlers, one module per API family, each registered with its version range.

`@api(key, lo, hi)` puts the handler and its range into the one API table
(`protocol.apis.API_TABLE`), which ApiVersions reads and dispatch enforces. A handler is
`async def handle(ctx, request) -> response | None` (None: send nothing, as for acks=0).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from kafkalite.protocol.apis import register

Handler = Callable[[Any, Any], Awaitable[Any]]
HANDLERS: dict[int, Handler] = {}

# Modules imported (and so registered) when the broker starts.
FAMILIES = [
    "api_versions",
    "metadata",
    "produce",
    "fetch",
    "list_offsets",
    "groups",
    "offsets",
    "transactions",
    "admin_topics",
    "admin_configs",
    "admin_records",
    "admin_cluster",
    "acls",
    "streams_groups",
    "share",
    "sasl",
    "scram_credentials",
    "client_quotas",
    "cluster_features",
    "replica_admin",
    "delegation_tokens",
    "telemetry",
]


def api(api_key: int, lo: int, hi: int, *, advertised_min: int | None = None):
    def deco(fn: Handler) -> Handler:
        register(api_key, lo, hi, advertised_min=advertised_min)
        HANDLERS[api_key] = fn
        return fn

    return deco


def load_all() -> None:
    for name in FAMILIES:
        # __import__ rather than importlib.import_module: `python -X importtime` (bench.startup
        # --explain) reports only imports made through the import statement's machinery
        __import__(f"{__name__}.{name}")
