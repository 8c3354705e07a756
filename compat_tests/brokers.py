"""Which broker the compatibility suite runs on, and starting one of it.

The suite runs on kafkalite by default; ``COMPAT_BROKER=kafka`` (or ``--broker=kafka``)
runs the very same tests on Apache Kafka (compat_tests/reference.py), which is the judge of
what they assert. (Not ``KAFKALITE_...``: kafkalite reads every ``KAFKALITE_<KEY>`` variable
of its environment as a broker setting and refuses unknown ones.) ``KAFKA_BOOTSTRAP=HOST:PORT`` instead points the suite at a broker it did
not start (tests that restart the broker, or need one with special settings, skip then).

:func:`start` gives a broker of the chosen kind with the same interface for both: ``bootstrap``,
``port``, ``kill()`` (SIGKILL), ``stop()`` (clean), ``restart()`` (same data dir and port) and
``close()``. ``config`` takes Kafka's broker setting names; the ``transaction.version`` feature
level, a broker setting in kafkalite, is a feature finalized at format time in Kafka.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import pytest

from compat_tests.reference import free_port
from kafkalite.broker.credentials import parse_scram_users
from kafkalite.tests import suite_brokers

KINDS = ("kafkalite", "kafka")
EXTERNAL_BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP")


def kind() -> str:
    """The broker the suite starts: "kafkalite" or "kafka" (Apache Kafka)."""
    value = os.environ.get("COMPAT_BROKER", "kafkalite").strip().lower() or "kafkalite"
    if value not in KINDS:
        raise pytest.UsageError(f"COMPAT_BROKER={value!r}: expected one of {', '.join(KINDS)}")
    return value


def on_kafka() -> bool:
    return kind() == "kafka"


class _Broker:
    """The face both kinds share; `_b` is the started broker (kafkalite.Broker or ReferenceBroker)."""

    _b: Any
    data_dir: Path

    def listener(self, name: str) -> str:
        """``host:port`` of the listener `name` (PLAINTEXT, or one given to start(listeners=...))."""
        raise NotImplementedError

    @property
    def bootstrap(self) -> str:
        return self._b.bootstrap

    @property
    def port(self) -> int:
        return self._b.port

    @property
    def pid(self) -> int | None:
        return self._b.pid

    def log_text(self) -> str:
        return self._b.log_text()

    def kill(self) -> None:
        self._b.kill()

    def stop(self) -> None:
        self._b.stop()

    def close(self) -> None:
        self._b.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class KafkaliteBroker(_Broker):
    """A kafkalite broker (kafkalite/tests/suite_brokers.py) with a restart on the same data dir and port."""

    def __init__(self, data_dir: Path | None, config: Mapping[str, Any] | None, timeout: float,
                 module: str | None = None, extra_args: tuple[str, ...] = (),
                 listeners: Mapping[str, str] | None = None, advertised: Mapping[str, str] | None = None):
        self._config, self._timeout = dict(config or {}), timeout
        start_args: dict[str, Any] = {"module": module} if module else {}
        self._listeners = {k.upper(): v.upper() for k, v in (listeners or {}).items()}
        self._advertised = {k.upper(): v for k, v in (advertised or {}).items()}
        # a listener advertised elsewhere binds a port chosen here: the ready line names only
        # the advertised address
        self._bound = {n: f"127.0.0.1:{free_port()}" for n in self._advertised}
        if self._listeners:
            # PLAINTEXT first: bootstrap stays the plain listener, as on the reference broker
            start_args["listeners"] = ["PLAINTEXT://127.0.0.1:0",
                                       *(f"{n}://{self._bound.get(n, '127.0.0.1:0')}" for n in self._listeners)]
            start_args["advertised_listeners"] = [f"{n}://{a}" for n, a in self._advertised.items()]
            mapping = {n: p for n, p in self._listeners.items() if n != p}
            if mapping:
                self._config.setdefault("listener.security.protocol.map", ",".join(
                    ["PLAINTEXT:PLAINTEXT", *(f"{n}:{p}" for n, p in mapping.items())]))
        self._b = suite_brokers.start(data_dir=data_dir, config=self._config, timeout=timeout,
                                      extra_args=list(extra_args), **start_args)
        self.data_dir = self._b.data_dir

    def listener(self, name: str) -> str:
        return self._bound.get(name.upper()) or self._b.listeners[name.upper()]

    def restart(self) -> str:
        """Stop if running, start again on the same data dir and port, as the plain broker: a
        test's own wiring (``module``) applies to the first start only, the one before a crash."""
        self._b.stop()
        start_args: dict[str, Any] = {"port": self.port}
        if self._listeners:
            start_args = {"listeners": [f"{n}://{self.listener(n)}" for n in self._b.listeners],
                          "advertised_listeners": [f"{n}://{a}" for n, a in self._advertised.items()]}
        self._b = suite_brokers.start(data_dir=self.data_dir, config=self._config, timeout=self._timeout,
                                      **start_args)
        return self.bootstrap


class KafkaBroker(_Broker):
    """compat_tests.reference.ReferenceBroker with the same face as KafkaliteBroker."""

    def __init__(self, data_dir: Path | None, config: Mapping[str, Any] | None, timeout: float,
                 listeners: Mapping[str, str] | None = None, advertised: Mapping[str, str] | None = None):
        from compat_tests.reference import ReferenceBroker

        config = dict(config or {})
        features = {}
        if "transaction.version" in config:
            features["transaction.version"] = str(config.pop("transaction.version"))
        # kafkalite's scram.users is what kafka-storage format --add-scram takes, one entry each
        scram = [f"{m}=[name={u},password={p},iterations={i}]"
                 for m, u, p, i in parse_scram_users(str(config.pop("scram.users", "")))]
        self._timeout = timeout
        self._b = ReferenceBroker(data_dir, config, features=features, listeners=listeners, scram=scram,
                                  advertised=advertised)
        try:
            self._b.start(timeout)
        except BaseException:
            self._b.close()
            raise
        self.data_dir = self._b.data_dir

    def listener(self, name: str) -> str:
        return self._b.listener_address(name)

    def restart(self) -> str:
        return self._b.restart(self._timeout)


# Settings every broker of the suite starts with, under a test's own. Tests produce records with
# fixed timestamps years in the past, so that offsets by time come out exact; a retention check (every
# 5 minutes by default) deleted such a segment from a session broker in the middle of a test, on
# Kafka (fetchTopicOffsetsByTimestamp then answered the end offset) as on kafkalite. Here retention is
# checked once a day; a test of retention or compaction sets its own interval.
SUITE_CONFIG: dict[str, Any] = {"log.retention.check.interval.ms": "86400000"}


def start(data_dir: str | os.PathLike | None = None, config: Mapping[str, Any] | None = None,
          timeout: float | None = None, *, kafkalite_module: str | None = None,
          kafkalite_args: tuple[str, ...] = (), listeners: Mapping[str, str] | None = None,
          advertised: Mapping[str, str] | None = None):
    """A broker of the kind the suite runs on. ``kafkalite_module`` runs kafkalite through a
    program that wires a part of it differently (e.g. broker.tests.slow_markers) with
    ``kafkalite_args``; that only exists in kafkalite: a test that needs it says so with
    :func:`requires_kafkalite`. ``listeners`` adds client listeners beside PLAINTEXT (name ->
    security protocol, each on a free port: ``broker.listener(name)``), configured by ``config``
    with Kafka's keys (``sasl.enabled.mechanisms``, ``listener.name.X.plain.sasl.jaas.config``,
    ``ssl.keystore.location``...); ``scram.users`` (kafkalite's setting) becomes kafka-storage's
    ``--add-scram`` on Kafka. ``advertised`` names the address Metadata and FindCoordinator give
    for some of those listeners (name -> ``host:port``, say a proxy in front of it);
    ``broker.listener(name)`` stays the address the listener is bound to."""
    path = Path(data_dir) if data_dir is not None else None
    config = {**SUITE_CONFIG, **(config or {})}
    if on_kafka():
        if kafkalite_module:
            raise ValueError(f"Apache Kafka cannot run {kafkalite_module}; mark the test requires_kafkalite")
        return KafkaBroker(path, config, timeout or 120.0, listeners, advertised)
    return KafkaliteBroker(path, config, timeout or 20.0, kafkalite_module, kafkalite_args, listeners, advertised)


def requires_kafkalite(reason: str) -> None:
    """Skip on Apache Kafka a test that depends on kafkalite's own wiring (the reason says which)."""
    if on_kafka():
        pytest.skip(f"kafkalite only: {reason}")


def requires_own_broker(what: str = "restarts") -> None:
    """Skip when the suite runs against KAFKA_BOOTSTRAP: it cannot start or restart that broker."""
    if EXTERNAL_BOOTSTRAP:
        pytest.skip(f"{what} need a broker the suite starts itself (KAFKA_BOOTSTRAP is set)")
