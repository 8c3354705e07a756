"""Request handlers, one module per API family, each registered with its version range.

Rules:
- `@api(key, lo, hi)` is the one place an API's versions are declared: it puts the range into
  the API table (`protocol.apis.API_TABLE`), which ApiVersions reads and dispatch enforces, and
  the handler into `HANDLERS`. A handler is `async def handle(ctx: RequestContext, request) ->
  response | None` (None: send nothing, as for acks=0).
- Each handler module opens with its APIs, each named with its key and the range `@api`
  declares ("Produce (key 0), v3-v13", "JoinGroup (11) v0-v9"), then its behaviours; a test
  (broker/tests/handlers/test_api_table.py) holds the two to agreement.
- To find the handler of an API key: `handler_table()` lists key, name, versions and the
  handler's module and function (`python -m kafkalite.broker.handlers` prints it).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from kafkalite.protocol.apis import API_TABLE, register

from ..context import RequestContext

Handler = Callable[[RequestContext, Any], Awaitable[Any]]
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


def api(api_key: int, lo: int, hi: int, *, advertised_min: int | None = None) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        register(api_key, lo, hi, advertised_min=advertised_min)
        HANDLERS[api_key] = fn
        return fn

    return deco


def handler_table() -> list[tuple[int, str, str, str]]:
    """(api key, Kafka's name, "vLO-vHI", module.function) for every API served, by key."""
    load_all()
    rows = []
    for key, fn in sorted(HANDLERS.items()):
        rng = API_TABLE[key]
        camel = "".join(part.capitalize() for part in rng.name.split("_"))
        rows.append((key, camel, f"v{rng.min_version}-v{rng.max_version}", f"{fn.__module__}.{fn.__name__}"))
    return rows


def load_all() -> None:
    for name in FAMILIES:
        # __import__ rather than importlib.import_module: `python -X importtime` (bench.startup
        # --explain) reports only imports made through the import statement's machinery
        __import__(f"{__name__}.{name}")
