"""kafkalite.start() / kafkalite.running(): the Python API for scripts and other test runners."""

from __future__ import annotations

import os

import pytest

import kafkalite
from kafkalite.admin import AdminConnection


def test_running_cleans_up_its_data_dir_and_log():
    with kafkalite.running() as b:
        data_dir, log_path = b.data_dir, b.log_path
        assert data_dir.is_dir() and log_path.exists()
        assert b.listeners == {"PLAINTEXT": b.bootstrap}
        with AdminConnection(b.bootstrap) as c:
            assert 18 in c.versions
    assert b.process.returncode is not None
    assert not data_dir.exists()
    assert not log_path.exists()


def test_kept_data_dir_holds_the_log(tmp_path):
    with kafkalite.running(data_dir=tmp_path / "data") as b:
        assert b.log_path == tmp_path / "data" / "broker.log"
    assert (tmp_path / "data" / "broker.log").read_text()
    assert (tmp_path / "data").is_dir()


def test_config_dict_becomes_broker_settings():
    with kafkalite.running(config={"num.partitions": 3, "auto.create.topics.enable": True}) as b:
        with AdminConnection(b.bootstrap) as c:
            # the Metadata that creates it answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka does
            (t,) = c.metadata(["auto"], allow_auto_create=True).topics
            assert int(t.error_code) == 3
            c.wait_for_topic("auto", 3)
    with kafkalite.running(config={"auto.create.topics.enable": False}) as b:
        with AdminConnection(b.bootstrap) as c:
            (t,) = c.metadata(["auto"], allow_auto_create=True).topics
            assert int(t.error_code) == 3  # UNKNOWN_TOPIC_OR_PARTITION


def test_broker_args():
    assert kafkalite.broker_args(config={"a.b": True, "c": 3}, log_level="DEBUG", metrics_port=0) == [
        "--host", "127.0.0.1", "--port", "0", "-c", "a.b=true", "-c", "c=3", "--log-level", "DEBUG",
        "--metrics-port", "0"]
    assert kafkalite.broker_args(listeners=["A://h:1", "B://h:2"], advertised_listeners=["B://x:2"]) == [
        "--listener", "A://h:1", "--listener", "B://h:2", "--advertised-listener", "B://x:2"]


def test_debug_log_has_connection_lines():
    with kafkalite.running(log_level="DEBUG") as b:
        AdminConnection(b.bootstrap).close()
        b.stop()
        log = b.log_text()
    assert "connection opened from 127.0.0.1:" in log
    assert "connection closed from 127.0.0.1:" in log


def test_a_bad_setting_fails_fast_with_the_brokers_message():
    with pytest.raises(RuntimeError, match="did you mean 'num.partitions'"):
        kafkalite.start(config={"num.partition": 3})


def test_callers_listener_variables_do_not_move_a_python_started_broker(monkeypatch):
    # e.g. a CI job that also configures a container through these
    monkeypatch.setenv("KAFKALITE_LISTENERS", "PLAINTEXT://0.0.0.0:9")
    monkeypatch.setenv("KAFKALITE_ADVERTISED_LISTENERS", "PLAINTEXT://elsewhere:9")
    monkeypatch.setenv("KAFKALITE_PORT", "9")
    with kafkalite.running() as b:
        assert b.bootstrap.startswith("127.0.0.1:") and b.port != 9


def test_callers_broker_key_variables_do_apply(monkeypatch):
    monkeypatch.setenv("KAFKALITE_NUM_PARTITIONS", "2")
    with kafkalite.running() as b:
        with AdminConnection(b.bootstrap) as c:
            c.metadata(["auto2"], allow_auto_create=True)
            c.wait_for_topic("auto2", 2)


def test_parse_ready_line():
    info = kafkalite.parse_ready_line(
        "kafkalite ready bootstrap=h:1 listeners=A://h:1,B://[::1]:2 metrics=http://127.0.0.1:3/metrics")
    assert info == {"bootstrap": "h:1", "listeners": {"A": "h:1", "B": "[::1]:2"},
                    "metrics": "http://127.0.0.1:3/metrics"}
    assert kafkalite.parse_ready_line("kafkalite ready bootstrap=h:1") == {"bootstrap": "h:1"}


def test_kill_and_restart_on_the_same_data_dir(tmp_path):
    b = kafkalite.start(data_dir=tmp_path)
    with AdminConnection(b.bootstrap) as c:
        c.create_topic("kept", 2)
    b.kill()
    with kafkalite.running(data_dir=tmp_path) as b2:
        with AdminConnection(b2.bootstrap) as c:
            (t,) = c.metadata(["kept"]).topics
            assert len(t.partitions) == 2


def test_package_root_is_first_on_the_childs_path():
    env = kafkalite._broker_env({"PYTHONPATH": "/elsewhere"})
    first, rest = env["PYTHONPATH"].split(os.pathsep, 1)
    assert os.path.isdir(os.path.join(first, "broker")) and os.path.isdir(os.path.join(first, "storage"))
    assert rest == "/elsewhere"


def test_env_adds_variables_to_ours(monkeypatch):
    monkeypatch.setenv("KAFKALITE_TEST_MARK", "1")
    env = kafkalite._broker_env({"EXTRA": "2"})
    assert env["EXTRA"] == "2" and env["KAFKALITE_TEST_MARK"] == "1" and env["PATH"] == os.environ["PATH"]
