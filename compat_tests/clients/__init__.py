"""One adapter per Kafka client, all with the interface of `base.Client`.

Feature tests are written once and parametrized over the adapters (see ``conftest.client``),
so ``-m java`` selects a client and ``-m compression`` a feature.

``ADAPTERS`` is the registry: adapter name (also its pytest marker) -> "module:Class". Adding a
client is one line here plus its module; a registered module that is missing or broken makes that
client's tests error (never skip), so a gap in coverage is always visible.
"""

from __future__ import annotations

import importlib

from .base import Client

ADAPTERS: dict[str, str] = {
    "java": "compat_tests.clients.java:JavaClient",
    "librdkafka": "compat_tests.clients.librdkafka:LibrdkafkaClient",
    "kafka_python": "compat_tests.clients.kafka_python:KafkaPythonClient",
    "aiokafka": "compat_tests.clients.aiokafka_client:AiokafkaClient",
    "kafkajs": "compat_tests.clients.kafkajs:KafkajsClient",
    "kcat": "compat_tests.clients.kcat:KcatClient",
    "franz": "compat_tests.clients.franz:FranzClient",
    "sarama": "compat_tests.clients.sarama:SaramaClient",
}


class AdapterMissing(RuntimeError):
    """A registered adapter cannot be loaded (its module or class is not there)."""


def load_adapter(name: str) -> type[Client]:
    """The adapter class registered under `name`; raises AdapterMissing with the reason."""
    try:
        target = ADAPTERS[name]
    except KeyError:
        raise AdapterMissing(f"no client adapter named {name!r}; known: {sorted(ADAPTERS)}") from None
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            raise AdapterMissing(f"client adapter {name!r}: module {module_name} does not exist yet") from e
        raise
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise AdapterMissing(f"client adapter {name!r}: {module_name} has no class {class_name}") from None


def start_offset(start: str | int | dict[int, int]) -> str | int | dict[int, int]:
    """Normalizes a consume `start`: "earliest", "latest", an absolute offset (int) for every
    partition, or a dict partition -> offset."""
    if isinstance(start, dict):
        return {int(p): int(o) for p, o in start.items()}
    if isinstance(start, int):
        return start
    if start in ("earliest", "latest"):
        return start
    try:
        return int(start)
    except ValueError:
        raise ValueError(f"consume start must be 'earliest', 'latest', an offset or a dict, not {start!r}") from None
