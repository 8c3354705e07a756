"""Which broker the compatibility suite runs on, and starting one of it.

The suite runs on kafkalite by default; ``KAFKALITE_BROKER=kafka`` (or ``--broker=kafka``)
runs the very same tests on Apache Kafka (compat_tests/reference.py), which is the judge of
what they assert. ``KAFKA_BOOTSTRAP=HOST:PORT`` instead points the suite at a broker it did
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

import kafkalite

KINDS = ("kafkalite", "kafka")
EXTERNAL_BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP")


def kind() -> str:
    """The broker the suite starts: "kafkalite" or "kafka" (Apache Kafka)."""
    value = os.environ.get("KAFKALITE_BROKER", "kafkalite").strip().lower() or "kafkalite"
    if value not in KINDS:
        raise pytest.UsageError(f"KAFKALITE_BROKER={value!r}: expected one of {', '.join(KINDS)}")
    return value


def on_kafka() -> bool:
    return kind() == "kafka"


class KafkaliteBroker:
    """kafkalite.start() with a restart on the same data dir and port."""

    def __init__(self, data_dir: Path | None, config: Mapping[str, Any] | None, env: Mapping[str, str] | None,
                 timeout: float):
        self._config, self._env, self._timeout = dict(config or {}), dict(env or {}), timeout
        self._b = kafkalite.start(data_dir=data_dir, config=self._config, env=self._env, timeout=timeout)
        self.data_dir = self._b.data_dir

    @property
    def bootstrap(self) -> str:
        return self._b.bootstrap

    @property
    def port(self) -> int:
        return self._b.port

    @property
    def pid(self) -> int:
        return self._b.pid

    def log_text(self) -> str:
        return self._b.log_text()

    def kill(self) -> None:
        self._b.kill()

    def stop(self) -> None:
        self._b.stop()

    def restart(self, env: Mapping[str, str] | None = None) -> str:
        """Stop if running, start again on the same data dir and port; ``env`` replaces the
        extra environment of the first start (a test hook set only before the crash)."""
        self._b.stop()
        if env is not None:
            self._env = dict(env)
        self._b = kafkalite.start(data_dir=self.data_dir, port=self.port, config=self._config, env=self._env,
                                  timeout=self._timeout)
        return self.bootstrap

    def close(self) -> None:
        self._b.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class KafkaBroker:
    """compat_tests.reference.ReferenceBroker with the same face as KafkaliteBroker."""

    def __init__(self, data_dir: Path | None, config: Mapping[str, Any] | None, timeout: float):
        from compat_tests.reference import ReferenceBroker

        config = dict(config or {})
        features = {}
        if "transaction.version" in config:
            features["transaction.version"] = str(config.pop("transaction.version"))
        self._timeout = timeout
        self._b = ReferenceBroker(data_dir, config, features=features)
        try:
            self._b.start(timeout)
        except BaseException:
            self._b.close()
            raise
        self.data_dir = self._b.data_dir

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

    def restart(self, env: Mapping[str, str] | None = None) -> str:
        return self._b.restart(self._timeout)

    def close(self) -> None:
        self._b.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def start(data_dir: str | os.PathLike | None = None, config: Mapping[str, Any] | None = None,
          env: Mapping[str, str] | None = None, timeout: float | None = None):
    """A broker of the kind the suite runs on. ``env`` (kafkalite's test hooks, KL_TEST_*)
    only exists in kafkalite: a test that needs one says so with :func:`requires_kafkalite`."""
    path = Path(data_dir) if data_dir is not None else None
    if on_kafka():
        if env:
            raise ValueError(f"Apache Kafka has no test hooks {sorted(env)}; mark the test requires_kafkalite")
        return KafkaBroker(path, config, timeout or 120.0)
    return KafkaliteBroker(path, config, env, timeout or 20.0)


def requires_kafkalite(reason: str) -> None:
    """Skip on Apache Kafka a test that depends on a kafkalite-only test hook (the reason says which)."""
    if on_kafka():
        pytest.skip(f"kafkalite only: {reason}")


def requires_own_broker(what: str = "restarts") -> None:
    """Skip when the suite runs against KAFKA_BOOTSTRAP: it cannot start or restart that broker."""
    if EXTERNAL_BOOTSTRAP:
        pytest.skip(f"{what} need a broker the suite starts itself (KAFKA_BOOTSTRAP is set)")
