"""kafkalite.forkserver: brokers forked from a warm server are real, separate brokers; close()
ends the process and removes the data dir, but stops a broker on the caller's data dir cleanly and
keeps the directory; a bad setting fails with the broker's own line; the server starts the next
broker ahead only when asked to; the server's end takes every broker it forked with it; a broker
is signalled only through the server, and never once it has ended and its pid is free."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import kafkalite
from kafkalite.forkserver import ForkedProcess, ForkServer
from kafkalite.protocol.client import WireClient
from compat_tests.differ.core import request


def _eventually(cond, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline
        time.sleep(0.02)


def _topics_file(data_dir) -> str:
    """The broker's topics store (broker/topic_store.py), empty before it is written."""
    path = data_dir / "__cluster_metadata" / "topics.json"
    return path.read_text() if path.exists() else ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def server():
    with ForkServer() as s:
        yield s


def test_separate_brokers_that_answer_and_go_away(server):
    first = server.start(config={"num.partitions": 3})
    second = server.start(config={"num.partitions": 3})  # the one started ahead for this command line
    assert isinstance(first, kafkalite.Broker) and first.port != second.port and first.pid != second.pid
    for broker in (first, second):
        with WireClient(broker.bootstrap) as wire:
            meta = wire.request(request(3, 12, topics=[{"name": "auto", "topic_id": None}],
                                        allow_auto_topic_creation=True, include_topic_authorized_operations=False))
        assert meta.topics[0].name == "auto"
    # each broker keeps the topic in its own data dir (its partitions' directories come with
    # their first write)
    assert second.data_dir != first.data_dir
    for broker in (first, second):
        _eventually(lambda broker=broker: '"auto"' in _topics_file(broker.data_dir))
    first.close()
    assert first.process.wait(10) is not None
    _eventually(lambda: not first.data_dir.exists())
    second.close(graceful=True)
    assert second.process.returncode == 0


def test_a_bad_setting_fails_with_the_brokers_line(server):
    with pytest.raises(RuntimeError, match="unknown broker config 'no.such.key'"):
        server.start(config={"no.such.key": 1})


def test_the_servers_end_ends_its_brokers():
    with ForkServer() as s:
        broker = s.start()
        pid = broker.pid
    _eventually(lambda: not _alive(pid))


def _metadata_topics(broker) -> list[str]:
    with WireClient(broker.bootstrap) as wire:
        meta = wire.request(request(3, 12, topics=None, allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False))
    return [t.name for t in meta.topics]


def test_a_data_dir_of_the_callers_is_kept_and_its_broker_stopped_cleanly(server, tmp_path):
    data = tmp_path / "data"
    broker = server.start(data_dir=data)
    assert broker.data_dir == data and broker.log_path == data / "broker.log"
    with WireClient(broker.bootstrap) as wire:
        wire.request(request(3, 12, topics=[{"name": "kept", "topic_id": None}],
                             allow_auto_topic_creation=True, include_topic_authorized_operations=False))
    broker.close()
    assert broker.process.returncode == 0  # SIGTERM and the broker's own clean exit, not a kill
    assert '"kept"' in _topics_file(data) and (data / "broker.log").stat().st_size > 0
    again = server.start(data_dir=data)
    try:
        assert "kept" in _metadata_topics(again)
    finally:
        again.close()
    assert data.is_dir()


def _children(pid: int) -> set[int]:
    return {int(c) for c in open(f"/proc/{pid}/task/{pid}/children").read().split()}


def test_the_next_broker_is_started_ahead_only_when_asked():
    for ahead, waiting in ((True, 2), (False, 1)):  # a spare fork, and the broker started ahead
        with ForkServer(start_ahead=ahead) as s:
            broker = s.start()
            assert len(_children(s.process.pid) - {broker.pid}) == waiting, ahead


def _zombie(pid: int) -> bool:
    """The process has ended and its parent has not reaped it yet (Linux's /proc)."""
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


def test_a_broker_that_ended_by_itself_is_not_signalled_through_its_old_pid(server):
    ended = server.start()
    os.kill(ended.pid, signal.SIGKILL)  # it crashes: its ForkedProcess has not seen it end
    _eventually(lambda: _zombie(ended.pid))
    other = server.start()  # the server reaps what ended: from now on the pid is free
    # a process that took the pid after it: the broker's process object must not signal it
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        reused = ForkedProcess(server, sleeper.pid, ended.process.broker_id)
        reused.kill()
        reused.terminate()
        assert sleeper.poll() is None
        assert reused.returncode == -signal.SIGKILL  # the crashed broker's own status
        assert ended.process.poll() == -signal.SIGKILL
        ended.close()  # its kill() finds the broker gone and signals nothing
        assert other.process.poll() is None and _metadata_topics(other) == []  # alive, answering
    finally:
        sleeper.kill()
        sleeper.wait()
        other.close()


def test_a_kill_is_not_held_behind_another_threads_wait(server):
    broker = server.start()
    waited: list[int] = []
    waiting = threading.Event()

    def wait() -> None:
        waiting.set()
        waited.append(broker.process.wait(60))

    thread = threading.Thread(target=wait)
    thread.start()
    waiting.wait(10)
    broker.process.kill()  # sent between the waiting thread's short requests, not after its 60 s
    thread.join(30)
    assert waited == [-signal.SIGKILL]
    broker.close()
