"""The web console's HTTP side without a browser: its views, its event stream, that it is
read-only, and that a broker started without it never imports its libraries."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer

import kafkalite
from kafkalite.admin import AdminConnection
from kafkalite.tests import suite_brokers


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(console=0) as b:
        yield b


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, json.load(r)


def status_of(url: str, method: str = "GET") -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def produce(bootstrap: str, topic: str, values: list[bytes], **conf) -> None:
    p = Producer({"bootstrap.servers": bootstrap, **conf})
    for v in values:
        p.produce(topic, value=v)
        p.flush(10)  # one batch per record


@pytest.fixture
def topic(broker):
    name = f"console-http-{uuid.uuid4().hex[:8]}"
    with AdminConnection(broker.bootstrap) as admin:
        admin.create_topic(name, 1, {"segment.bytes": "1048576"})
        admin.wait_for_topic(name, 1)
    return name


def test_views_of_a_partition_with_plain_and_idempotent_batches(broker, topic):
    produce(broker.bootstrap, topic, [b"a", b"b"], **{"enable.idempotence": False})
    produce(broker.bootstrap, topic, [b'{"n": 1}'], **{"enable.idempotence": True})
    _, view = get(f"{broker.console_url}api/partition/{topic}/0")
    assert [b["kind"] for b in view["batches"]] == ["plain", "plain", "idempotent"]
    assert [b["base_offset"] for b in view["batches"]] == [0, 1, 2]
    assert view["high_watermark"] == view["last_stable_offset"] == 3
    assert view["lso_held_by"] is None
    idem = view["batches"][2]
    assert idem["producer_id"] >= 0 and idem["base_sequence"] == 0
    assert [p["producer_id"] for p in view["producers"]] == [idem["producer_id"]]
    assert view["producers"][0]["last_sequence"] == 0

    _, records = get(f"{broker.console_url}api/records/{topic}/0/2")
    value = records["records"][0]["value"]
    assert records["base_offset"] == 2 and value["text"] == '{"n": 1}'
    assert json.loads(value["json"]) == {"n": 1} and value["hex"] == "7b 22 6e 22 3a 20 31 7d"

    _, topics = get(f"{broker.console_url}api/topics")
    entry = next(t for t in topics["topics"] if t["name"] == topic)
    assert entry["overrides"] == {"segment.bytes": "1048576"}
    assert entry["configs"]["segment.bytes"] == "1048576"
    assert entry["partitions"][0]["high_watermark"] == 3
    assert entry["partitions"][0]["size_bytes"] > 0


def test_stream_sends_a_new_snapshot_soon_after_an_append(broker, topic):
    events: list[dict] = []
    got_first = threading.Event()

    def listen():
        with urllib.request.urlopen(f"{broker.console_url}api/stream/partition?topic={topic}&partition=0",
                                    timeout=10) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            for raw in r:
                line = raw.decode().strip()
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
                    got_first.set()
                    if len(events) == 2:
                        return

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    assert got_first.wait(10)
    assert events[0]["high_watermark"] == 0
    produce(broker.bootstrap, topic, [b"x"], **{"enable.idempotence": False})
    appended = time.monotonic()  # produce() returns once the record is acknowledged
    t.join(5)
    assert len(events) == 2, "no second snapshot"
    # the stream polls every second at most; the slack is for a machine running the suite on
    # every core (a client's own start-up is not in this interval)
    assert time.monotonic() - appended < 3
    assert events[1]["high_watermark"] == 1


def test_read_only_and_errors(broker, topic):
    url = broker.console_url
    assert status_of(f"{url}api/topics", "POST") == 405
    assert status_of(f"{url}api/partition/{topic}/0", "DELETE") == 405
    assert status_of(f"{url}api/partition/nope/0") == 404
    assert status_of(f"{url}api/partition/{topic}/x") == 404
    assert status_of(f"{url}api/records/{topic}/0/99") == 404
    assert status_of(f"{url}api/stream/nope") == 404
    assert status_of(f"{url}api/stream/partition?topic=nope&partition=0") == 404
    # the page and its assets are served
    with urllib.request.urlopen(url, timeout=10) as r:
        page = r.read().decode()
    script = page.split('src="', 1)[1].split('"', 1)[0]
    assert status_of(url.rstrip("/") + script) == 200


def test_without_the_flag_the_console_libraries_are_never_imported():
    code = ("import sys, kafkalite.broker.cli, kafkalite.broker.server; "
            "print(sorted(m for m in ('starlette', 'hypercorn', 'anyio', 'kafkalite.broker.console') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=kafkalite._PACKAGE_ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_bad_console_address_is_a_usage_error():
    out = subprocess.run(kafkalite.broker_command(["--port", "0", "--console", "nope"]), capture_output=True,
                         text=True, timeout=60, env=kafkalite._broker_env())
    assert out.returncode == 2
    assert "--console must be a port number" in out.stderr


def test_groups_view_of_a_kip848_group(broker, topic):
    from confluent_kafka import Consumer, TopicPartition

    produce(broker.bootstrap, topic, [b"a", b"b", b"c"], **{"enable.idempotence": False})
    group = f"console-848-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "group.protocol": "consumer",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment()
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        _, view = get(f"{broker.console_url}api/groups")
        entry = next(g for g in view["groups"] if g["group_id"] == group)
        assert entry["type"] == "consumer" and entry["state"] == "Stable"
        assert entry["generation"] >= 1 and entry["assignor"] in ("uniform", "range")
        [member] = entry["members"]
        assert member["assignment"] == [f"{topic}-0"] and member["member_epoch"] == entry["generation"]
        [row] = entry["offsets"]
        assert (row["committed_offset"], row["high_watermark"], row["lag"]) == (1, 3, 2)
        assert row["pending_offset"] is None
    finally:
        consumer.close()


def test_pending_transactional_offsets_until_the_commit(broker, topic):
    from confluent_kafka import Consumer, TopicPartition

    produce(broker.bootstrap, topic, [b"a", b"b"], **{"enable.idempotence": False})
    group = f"console-txn-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"console-eos-{group}"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.produce(topic, value=b"out")
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 2)], consumer.consumer_group_metadata(), 15)
        producer.flush(10)

        def row():
            _, view = get(f"{broker.console_url}api/groups")
            entry = next(g for g in view["groups"] if g["group_id"] == group)
            return next(r for r in entry["offsets"] if r["topic"] == topic)

        pending = row()
        assert pending["pending_offset"] == 2 and pending["pending_producer_id"] >= 0
        assert pending["committed_offset"] is None and pending["lag"] is None
        _, txns = get(f"{broker.console_url}api/transactions")
        t = next(t for t in txns["transactions"] if t["transactional_id"] == f"console-eos-{group}")
        assert t["state"] == "Ongoing" and t["producer_id"] == pending["pending_producer_id"]
        assert f"{topic}-0" in t["partitions"] and t["open"]

        producer.commit_transaction(15)
        deadline = time.monotonic() + 5
        while (done := row())["pending_offset"] is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert done["pending_offset"] is None and done["committed_offset"] == 2
        assert done["lag"] == done["high_watermark"] - 2
    finally:
        consumer.close()


def test_timeline_shows_the_newest_batches_and_pages_from_an_offset(broker, topic):
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": False, "batch.num.messages": 1,
                  "linger.ms": 0})
    for i in range(450):
        p.produce(topic, value=b"%d" % i)
    assert p.flush(30) == 0
    _, newest = get(f"{broker.console_url}api/partition/{topic}/0")
    offsets = [b["base_offset"] for b in newest["batches"]]
    assert newest["truncated"] and len(offsets) == 400
    assert offsets == list(range(50, 450))  # one record per batch: the newest 400
    _, page = get(f"{broker.console_url}api/partition/{topic}/0?from=10")
    assert [b["base_offset"] for b in page["batches"]] == list(range(10, 410))
    _, tail = get(f"{broker.console_url}api/partition/{topic}/0?from=420")
    assert [b["base_offset"] for b in tail["batches"]] == list(range(420, 450)) and not tail["truncated"]


def test_transaction_history_newest_first(broker, topic):
    tid = f"console-history-{uuid.uuid4().hex[:6]}"
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    p.init_transactions(15)
    for outcome in ("commit", "commit", "abort", "commit"):
        p.begin_transaction()
        p.produce(topic, value=outcome.encode())
        p.flush(10)
        p.commit_transaction(15) if outcome == "commit" else p.abort_transaction(15)
    deadline = time.monotonic() + 5
    while True:
        _, view = get(f"{broker.console_url}api/transactions")
        t = next(t for t in view["transactions"] if t["transactional_id"] == tid)
        if len(t["history"]) == 4 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert [h["outcome"] for h in t["history"]] == ["commit", "abort", "commit", "commit"]
    assert all(h["partitions"] == [f"{topic}-0"] for h in t["history"])
    assert all(h["end_ms"] >= h["start_ms"] > 0 for h in t["history"])
    assert t["state"] == "CompleteCommit" and not t["open"]


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_records_of_a_compressed_batch(broker, topic, codec):
    # One batch: the five records are produced well within linger.ms, and flush() sends them at once.
    # The producer learns the topic's partitions first. Records produced before that wait in
    # librdkafka's unassigned queue and move to partition 0 one by one once metadata arrives, and a
    # flush() already under way can send the first of them alone: two batches.
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 5000})
    assert len(p.list_topics(topic, timeout=10).topics[topic].partitions) == 1
    for i in range(5):
        p.produce(topic, key=b"k%d" % i, value=b"value %d " % i * 20, headers=[("h", None)])
    assert p.flush(10) == 0
    _, view = get(f"{broker.console_url}api/partition/{topic}/0")
    [batch] = view["batches"]
    assert batch["compression"] == codec and batch["record_count"] == 5
    _, records = get(f"{broker.console_url}api/records/{topic}/0/3")
    assert [r["offset"] for r in records["records"]] == [0, 1, 2, 3, 4]
    assert records["records"][3]["key"]["text"] == "k3"
    assert records["records"][3]["value"]["text"] == "value 3 " * 20
    assert records["records"][3]["headers"] == [{"key": "h", "value": None}]


def start_without(library: str, flags: list[str], tmp_path) -> subprocess.CompletedProcess:
    """Starts a broker with `flags` in a process where `library` is not there: importing it fails
    and importlib finds no spec for it, as when it is not installed."""
    (tmp_path / "without_library.py").write_text(
        f"import runpy, sys\nsys.modules[{library!r}] = None\nrunpy.run_module('kafkalite', run_name='__main__', alter_sys=True)\n")
    return subprocess.run(kafkalite.broker_command(["--port", "0", *flags], module="without_library"),
                          capture_output=True, text=True, timeout=60,
                          env=kafkalite._broker_env({"PYTHONPATH": str(tmp_path)}))


def test_without_the_console_libraries_the_flag_fails_with_a_reason(tmp_path):
    out = start_without("starlette", ["--console", "0"], tmp_path)
    assert out.returncode == 2, out.stderr
    # one line: the flag, the missing package and the command that installs the extra
    [line] = out.stderr.splitlines()
    assert line.startswith("kafkalite: --console needs the console extra, and starlette is not installed: "), line
    assert "-m pip install" in line and "starlette" in line.split("pip install", 1)[1]
    assert "kafkalite ready" not in out.stdout
