"""--schema-registry and KAFKALITE_SCHEMA_REGISTRY: the address is a port or HOST:PORT (a bare
port listens on the first listener's host), a bad one is a startup mistake (one line, exit 2),
and the ready line names the registry's URL, which the launcher reads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kafkalite.broker.cli import parse_args, resolve
from kafkalite.broker.settings.broker_keys import UnknownConfig
from kafkalite.launcher import parse_ready_line


def settings(argv: list[str], env: dict[str, str] | None = None):
    return resolve(parse_args(argv), env or {})


def test_flag_and_environment():
    assert settings([]).schema_registry is None
    assert settings(["--schema-registry", "8081"]).schema_registry == ("127.0.0.1", 8081)
    assert settings(["--schema-registry", "0.0.0.0:0"]).schema_registry == ("0.0.0.0", 0)
    assert settings([], {"KAFKALITE_SCHEMA_REGISTRY": "9999"}).schema_registry == ("127.0.0.1", 9999)
    assert settings(["--schema-registry", "1"], {"KAFKALITE_SCHEMA_REGISTRY": "2"}).schema_registry[1] == 1
    with pytest.raises(UnknownConfig):
        settings(["--schema-registry", "http"])


def test_a_bad_address_is_one_line_and_exit_2():
    proc = subprocess.run([sys.executable, "-m", "kafkalite", "--port", "0", "--schema-registry", "70000"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--schema-registry must be a port number" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ready_line_part():
    info = parse_ready_line("kafkalite ready bootstrap=127.0.0.1:9092 listeners=PLAINTEXT://127.0.0.1:9092 "
                            "schema_registry=http://127.0.0.1:8081/")
    assert info["schema_registry"] == "http://127.0.0.1:8081/"


def test_running_broker_names_its_registry(registry_broker):
    assert registry_broker.schema_registry_url.startswith("http://127.0.0.1:")
    assert registry_broker.schema_registry_url.endswith("/")
