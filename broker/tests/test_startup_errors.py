"""A broker that cannot start as asked says what is wrong in one line and exits 2, before any
ready line and without a traceback (broker.startup_checks, broker.supervisor); a failed
kafkalite.start() leaves nothing behind. The console extra missing is tested where its flags
are (test_console.py, test_controls_http.py) and for real in a venv without it (test_wheel.py).

Directories are made unwritable with chmod, or for root (whom permissions do not stop) with a
read-only bind mount in a mount namespace of the broker's own (unshare -m)."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

import kafkalite

pytestmark = pytest.mark.timeout(120)


def run_readonly(args: list[str], readonly: list[Path]) -> subprocess.CompletedProcess:
    """The broker with `args`, the directories `readonly` not writable for it."""
    command = kafkalite.broker_command(args)
    if os.geteuid() != 0:
        for d in readonly:
            d.chmod(0o555)
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=60, env=kafkalite._broker_env())
        finally:
            for d in readonly:
                d.chmod(0o755)
    mounts = " && ".join(f"mount --bind {shlex.quote(str(d))} {shlex.quote(str(d))} && "
                         f"mount -o remount,ro,bind {shlex.quote(str(d))}" for d in readonly)
    script = f"{mounts} && exec {shlex.join(command)}"
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=60,
                          env=kafkalite._broker_env())


def one_line(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 2, out.stderr
    assert out.stdout == "" and "Traceback" not in out.stderr, out.stderr
    return out.stderr.strip().splitlines()[-1]


def test_a_data_dir_that_cannot_be_written(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    line = one_line(run_readonly(["--port", "0", "--data-dir", str(data)], [data]))
    assert line in (f"kafkalite: cannot write to the data dir {data}: Read-only file system",
                    f"kafkalite: cannot write to the data dir {data}: Permission denied"), line


def test_a_data_dir_whose_topics_cannot_be_written_is_refused_at_start(tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    data = tmp_path / "data"
    with kafkalite.running(data_dir=data) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(timeout=30)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce("orders", b"v")    # the partition's directory is made by its first write
        assert producer.flush(30) == 0
    partition = data / "orders-0"
    assert partition.is_dir() and (data / "__cluster_metadata").is_dir()
    line = one_line(run_readonly(["--port", "0", "--data-dir", str(data)], [partition]))
    assert line.startswith(f"kafkalite: cannot write to the partition dir {partition}: "), line


def test_a_data_dir_that_is_a_file(tmp_path):
    (tmp_path / "file").write_text("")
    out = subprocess.run(kafkalite.broker_command(["--port", "0", "--data-dir", str(tmp_path / "file" / "d")]),
                         capture_output=True, text=True, timeout=60, env=kafkalite._broker_env())
    assert one_line(out) == f"kafkalite: cannot create the data dir {tmp_path / 'file' / 'd'}: Not a directory"


@pytest.mark.parametrize("flag, what", [("--metrics-port", "metrics"), ("--console", "the console"),
                                        ("--controls", "the controls")])
def test_an_endpoint_address_in_use_is_named(flag, what):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(kafkalite.broker_command(["--port", "0", flag, f"127.0.0.1:{port}"]),
                             capture_output=True, text=True, timeout=60, env=kafkalite._broker_env())
    assert one_line(out) == f"kafkalite: cannot listen for {what} on 127.0.0.1:{port}: Address already in use"


def test_a_failed_start_removes_the_log_and_data_dir_it_made(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"(?s)did not become ready \(exit code 2\).*unknown broker config .no.such.key."):
        kafkalite.start(config={"no.such.key": 1})
    assert list(tmp_path.iterdir()) == []


def test_the_schema_registry_without_its_libraries_is_one_line(tmp_path):
    from .test_console import start_without

    out = start_without("avro", ["--schema-registry", "0"], tmp_path)
    line = one_line(out)
    assert line == ("kafkalite: --schema-registry needs avro: pip install '.[schema-registry]' in a kafkalite "
                    "checkout"), line
    assert "kafkalite ready" not in out.stdout
