"""A schema registry in the broker: Confluent Schema Registry's REST API served from the broker
process (`kafkalite --schema-registry [HOST:]PORT`), kept in the compacted topic `_schemas` in
Confluent's record format, with Confluent's compatibility rules for Avro, JSON Schema and Protobuf.

    records.py        the `_schemas` keys and values (Confluent's JSON format)
    store.py          the topic, written through the partition append path; the in-memory index
    registry.py       the operations and their rules (register, lookup, versions, deletes, config, mode)
    schemas.py        the three types behind one parse / compatibility entry
    avro_schemas.py, json_schemas.py, protobuf_schemas.py (+ protobuf_descriptors.py)   each type's rules
    api.py            the HTTP routes (Starlette), errors as Confluent answers them
    ..http_basic_auth HTTP basic auth against the broker's SASL users (the console asks it too)
    errors.py         Confluent's error codes and messages

Like the console, the API is Starlette on hypercorn's trio worker on the broker's own loop
(broker.http_endpoint.serve_app), so a request runs among the broker's tasks: an operation checks and
writes without awaiting in between, and needs no lock. This package is imported only when the
registry is asked for."""

from __future__ import annotations

import logging
from typing import Any

import trio

log = logging.getLogger("kafkalite.schema_registry")


LIBRARIES = {"avro": "avro", "jsonschema": "jsonschema", "google.protobuf": "protobuf",
             "proto_schema_parser": "proto-schema-parser"}


def missing_libraries() -> list[str]:
    """The PyPI names of the schema libraries that are not installed (found, not imported)."""
    from importlib.util import find_spec

    missing = []
    for module, package in LIBRARIES.items():
        try:
            found = find_spec(module) is not None
        except ModuleNotFoundError:  # a missing parent package (google)
            found = False
        if not found:
            missing.append(package)
    return missing


def open_registry(broker: Any):
    """The registry over the broker's `_schemas` topic, its index read from the topic."""
    from .registry import Registry
    from .store import SchemaStore

    store = SchemaStore(broker)
    store.load()
    return Registry(store)


async def serve_schema_registry(broker: Any, host: str, port: int, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve the REST API until cancelled; reports (host, bound port) through task_status. The
    registry is readable from the broker as `broker.schema_registry` (a decoding.RegistryView: the
console's Schemas page and decoded records)."""
    from ..http_endpoint import Guard, serve_app

    missing = missing_libraries()
    if missing:
        # one line and exit status 2, as every startup mistake (broker.startup_checks)
        from ..startup_checks import StartupError

        raise StartupError(f"--schema-registry needs {', '.join(missing)}: "
                           "pip install '.[schema-registry]' in a kafkalite checkout")
    registry = open_registry(broker)
    from .decoding import RegistryView

    broker.schema_registry = RegistryView(registry)

    def make_app():
        from .api import make_app
        from ..http_basic_auth import BasicAuth

        return make_app(registry, BasicAuth(broker))

    # the API checks its own media types and basic auth, and answers them in Confluent's shape
    await serve_app(make_app, host, port, "kafkalite.schema_registry.http",
                    Guard(broker.http_access, host, json_bodies=False), task_status=task_status)
