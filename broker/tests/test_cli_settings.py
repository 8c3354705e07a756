"""The CLI's merge of defaults, --config file, KAFKALITE_* environment and command line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import kafkalite
from kafkalite.broker.cli import list_configs, parse_args
from kafkalite.broker.settings.broker_keys import BROKER_KEYS, UnknownConfig
from kafkalite.broker.settings.layering import FLAG_ENV, OTHER_ENV, resolve
from kafkalite.broker.settings.listeners import Listener


def settings(argv, env=None):
    return resolve(parse_args(argv), env or {})


def test_defaults():
    s = settings([])
    assert s.listeners == [Listener("PLAINTEXT", "127.0.0.1", 9092)]
    assert s.advertised == []
    assert s.values == {}
    assert s.log_level == "INFO"
    assert s.data_dir is None and s.metrics is None


def test_precedence_cli_over_env_over_file(tmp_path: Path):
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=2\nlog.retention.ms=1000\nmessage.max.bytes=500\n")
    env = {"KAFKALITE_CONFIG": str(props), "KAFKALITE_NUM_PARTITIONS": "4", "KAFKALITE_LOG_RETENTION_MS": "2000"}
    s = settings(["-c", "num.partitions=8"], env)
    assert s.values == {"num.partitions": "8", "log.retention.ms": "2000", "message.max.bytes": "500"}
    assert s.origins == {"num.partitions": "cli", "log.retention.ms": "env", "message.max.bytes": "file"}


def test_config_flag_beats_config_env(tmp_path: Path):
    a, b = tmp_path / "a.properties", tmp_path / "b.properties"
    a.write_text("num.partitions=2\n")
    b.write_text("num.partitions=3\n")
    assert settings(["--config", str(b)], {"KAFKALITE_CONFIG": str(a)}).values == {"num.partitions": "3"}


def test_fsync_flag_is_the_fsync_key():
    assert settings(["--fsync", "always"], {"KAFKALITE_FSYNC": "never"}).values == {"fsync": "always"}
    assert settings([], {"KAFKALITE_FSYNC": "never"}).values == {"fsync": "never"}


def test_unknown_keys_are_errors_wherever_they_come_from(tmp_path: Path):
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=2\nnot.a.key=1\n")
    with pytest.raises(UnknownConfig, match=r"'not.a.key' in .*server.properties"):
        settings(["--config", str(props)])
    with pytest.raises(UnknownConfig, match="'bogus' given with -c"):
        settings(["-c", "bogus=1"])
    with pytest.raises(UnknownConfig, match="KAFKALITE_BOGUS"):
        settings([], {"KAFKALITE_BOGUS": "1"})
    with pytest.raises(UnknownConfig, match="KEY=VALUE"):
        settings(["-c", "num.partitions"])
    with pytest.raises(UnknownConfig, match="cannot read config file"):
        settings(["--config", str(tmp_path / "missing.properties")])


def test_other_programs_variables_are_left_alone():
    assert settings([], {"KAFKALITE_WAIT_FOR_ENV_FILE": "/x", "KAFKALITE_DEPS_DIR": "/y"}).values == {}


def test_host_port_from_env_and_flags():
    assert settings([], {"KAFKALITE_HOST": "0.0.0.0", "KAFKALITE_PORT": "9093"}).listeners == [
        Listener("PLAINTEXT", "0.0.0.0", 9093)]
    # a flag overrides its own variable; the other one still applies
    assert settings(["--port", "0"], {"KAFKALITE_HOST": "0.0.0.0", "KAFKALITE_PORT": "9093"}).listeners == [
        Listener("PLAINTEXT", "0.0.0.0", 0)]


def test_listener_lists_by_level():
    env = {"KAFKALITE_LISTENERS": "A://0.0.0.0:1,B://0.0.0.0:2", "KAFKALITE_HOST": "0.0.0.0",
           "KAFKALITE_PORT": "9092"}
    # the env's explicit list beats the env's host/port shorthand
    assert [l.name for l in settings([], env).listeners] == ["A", "B"]
    # command-line --host/--port beat any env listener list
    assert settings(["--host", "127.0.0.1", "--port", "0"], env).listeners == [Listener("PLAINTEXT", "127.0.0.1", 0)]
    # --listener is repeatable and comma-separable, and beats --port
    s = settings(["--port", "5", "--listener", "X://127.0.0.1:0,Y://[::1]:0", "--listener", "Z://localhost:0"])
    assert [(l.name, l.host) for l in s.listeners] == [("X", "127.0.0.1"), ("Y", "::1"), ("Z", "localhost")]
    # Kafka's key names work in a file and with -c
    assert settings(["-c", "listeners=Q://127.0.0.1:0"]).listeners == [Listener("Q", "127.0.0.1", 0)]


def test_empty_listener_host_means_every_interface():
    assert settings(["--listener", "PLAINTEXT://:9092"]).listeners == [Listener("PLAINTEXT", "0.0.0.0", 9092)]


def test_advertised_listeners():
    s = settings(["--listener", "IN://0.0.0.0:0", "--listener", "OUT://0.0.0.0:0",
                  "--advertised-listener", "OUT://example.com:0"],
                 {"KAFKALITE_ADVERTISED_LISTENERS": "IN://kafka:19092"})
    assert s.advertised == [Listener("OUT", "example.com", 0)]  # the command line replaces the env list
    s = settings(["--listener", "IN://0.0.0.0:0"], {"KAFKALITE_ADVERTISED_LISTENERS": "kafka:19092"})
    assert s.advertised == [Listener("IN", "kafka", 19092)]  # no name: the first listener's


@pytest.mark.parametrize("argv, match", [
    (["--listener", "A://h:1", "--listener", "A://h:2"], "used twice"),
    (["--listener", "A://h:1", "--advertised-listener", "B://x:1"], "names no listener"),
    (["--listener", "A://h:1", "--advertised-listener", "A://0.0.0.0:1"], "needs a host"),
    (["--listener", "A://h:1", "--advertised-listener", "A://x:1,A://y:1"], "advertised twice"),
    (["--listener", "nonsense"], "listeners"),
    (["--log-level", "LOUD"], "log-level"),
    (["--metrics-port", "http"], "metrics-port"),
])
def test_bad_settings(argv, match):
    with pytest.raises(UnknownConfig, match=match):
        settings(argv)


def test_tls_self_signed_from_the_flag_or_a_boolean_variable():
    assert settings(["--tls-self-signed"]).tls_self_signed
    assert settings([], {"KAFKALITE_TLS_SELF_SIGNED": "true"}).tls_self_signed
    assert not settings([], {"KAFKALITE_TLS_SELF_SIGNED": "false"}).tls_self_signed
    assert not settings([]).tls_self_signed
    with pytest.raises(UnknownConfig, match="KAFKALITE_TLS_SELF_SIGNED must be true or false, not 'ture'"):
        settings([], {"KAFKALITE_TLS_SELF_SIGNED": "ture"})


def test_log_level_and_metrics_port():
    s = settings(["--metrics-port", "0"], {"KAFKALITE_LOG_LEVEL": "debug"})
    assert s.log_level == "DEBUG"
    assert s.metrics == ("127.0.0.1", 0)
    assert settings([], {"KAFKALITE_METRICS_PORT": "[::1]:9404", "KAFKALITE_HOST": "0.0.0.0"}).metrics == ("::1", 9404)
    assert settings([], {"KAFKALITE_METRICS_PORT": "9404", "KAFKALITE_HOST": "0.0.0.0"}).metrics == ("0.0.0.0", 9404)


def test_list_configs_names_every_key_and_its_variable():
    text = list_configs()
    for key in BROKER_KEYS:
        assert f"\n{key}=" in "\n" + text
    assert "[KAFKALITE_NUM_PARTITIONS]" in text


# --- the program itself --------------------------------------------------------------------------

def run_cli(*args, env=None, timeout=30):
    return subprocess.run(kafkalite.broker_command(list(args)), capture_output=True, text=True, timeout=timeout,
                          env=kafkalite._broker_env(env), stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args, env, message", [
    (["-c", "num.partiton=3"], {}, "did you mean 'num.partitions'"),
    ([], {"KAFKALITE_AUTO_CREATE_TOPIC_ENABLE": "false"}, "did you mean KAFKALITE_AUTO_CREATE_TOPICS_ENABLE"),
    (["-c", "num.partitions=x"], {}, "bad value for num.partitions"),
    (["--advertised-listener", "OTHER://h:1"], {}, "names no listener"),
])
def test_bad_configuration_exits_2_with_one_clear_line(args, env, message):
    r = run_cli("--port", "0", *args, env=env)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == ""


def test_list_configs_exits_0():
    r = run_cli("--list-configs")
    assert r.returncode == 0
    assert "num.partitions=1" in r.stdout


def test_port_in_use_is_reported_without_traceback():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run_cli("--port", str(port))
    assert r.returncode == 2, r.stderr
    # the log's INFO lines, then one line naming the address
    assert r.stderr.splitlines()[-1] == f"kafkalite: cannot listen on PLAINTEXT://127.0.0.1:{port}: address already in use"
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_python_m_broker_and_kafkalite_script_are_one_program():
    r = subprocess.run([sys.executable, "-c", "import importlib.metadata as m; "
                        "print([e.value for e in m.entry_points(group='console_scripts') if e.name == 'kafkalite'])"],
                       capture_output=True, text=True)
    assert "broker.cli:main" in r.stdout


def test_the_scripts_variables_are_left_alone_by_the_broker() -> None:
    """A KAFKALITE_ variable that names no broker config stops the broker (a typo must not pass
    unseen), so every one the repository's scripts read is one the broker knows to leave alone:
    the brokers a full run starts inherit them (`KAFKALITE_CPU_REPORT=1 scripts/test.sh` stopped
    every one before)."""
    scripts = Path(__file__).resolve().parents[2] / "scripts"
    read = {name for script in scripts.glob("*.sh") for name in re.findall(r"\bKAFKALITE_[A-Z0-9_]+", script.read_text())}
    assert read and read <= OTHER_ENV | set(FLAG_ENV.values()), sorted(read - OTHER_ENV - set(FLAG_ENV.values()))
