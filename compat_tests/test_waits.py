"""The broker answering a test's questions (kafkalite only: Apache Kafka has no such controls),
with group members of every client the suite drives:

- a group of the Java client (classic and KIP-848 protocols), franz-go or kafkajs reaches Stable
  with its partitions assigned (`wait-group`), the records the client produced are read back
  without a client (`wait-records`, `records`), and once the member commits the lag is 0
  (`wait-committed`); nothing needs a sleep or a client-side poll;
- a Java share consumer's share group and a streams group (StreamsGroupHeartbeat over the wire)
  answer `wait-group`;
- a Java transaction left open: `wait-idle` answers 408 naming it, then returns once it commits;
- every control from the command line, `kafkalite control NAME key=value`, the 408 printing its
  state.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from compat_tests import brokers
from compat_tests.cleanup import killed_at_end
from compat_tests.clients.base import Msg
from compat_tests.groups.members import Member
from compat_tests.test_groups import KINDS
from kafkalite.tests import suite_brokers

pytestmark = pytest.mark.controls

# the group test's members of the Java client, franz-go (its KIP-848 member joins kafkalite with
# JoinGroup: the classic protocol only here) and kafkajs (confluent-kafka's are in broker/tests)
GROUP_CLIENTS = [kind for kind in KINDS if kind.id in {"java-classic", "java-consumer", "franz-classic", "kafkajs"}]


@pytest.fixture(scope="module")
def broker():
    brokers.requires_kafkalite("the waits are kafkalite's own controls")
    with suite_brokers.running(controls=0) as b:
        yield b


@pytest.fixture
def members():
    with killed_at_end() as started:
        yield started


def new_topic(broker, partitions: int = 2) -> str:
    from compat_tests.clients.librdkafka import LibrdkafkaClient

    topic = f"waits-{uuid.uuid4().hex[:8]}"
    LibrdkafkaClient(broker.bootstrap).create_topic(topic, partitions)
    return topic


def client_of(name: str, bootstrap: str):
    """The producing client of the same language as the member."""
    if name == "java":
        from compat_tests.clients.java import JavaClient
        return JavaClient(bootstrap)
    if name == "franz":
        from compat_tests.clients.franz import FranzClient
        return FranzClient(bootstrap)
    from compat_tests.clients.kafkajs import KafkajsClient
    return KafkajsClient(bootstrap)


@pytest.mark.parametrize("kind", GROUP_CLIENTS)
def test_group_stable_records_and_lag_zero(broker, members, kind):
    client, protocol = kind
    topic = new_topic(broker)
    group = f"g-{topic}"
    for partition in (0, 1):
        client_of(client, broker.bootstrap).produce(
            topic, [Msg(value=f"p{partition}-{i}".encode(), key=f"k{i}".encode(), headers=(("src", client.encode()),))
                    for i in range(3)], partition=partition)
    # the records as the broker holds them, without a consumer
    got = broker.wait_for_records(topic, count=6, header=f"src={client}", timeout_ms=30_000)
    assert sorted(r["value"] for r in got) == sorted(f"p{p}-{i}" for p in (0, 1) for i in range(3))
    assert {r["key"] for r in got} == {"k0", "k1", "k2"} and all(r["transaction"] is None for r in got)
    assert [r["offset"] for r in broker.records(topic, partition=1)] == [0, 1, 2]

    m = Member(client, broker.bootstrap, group, topic, protocol=protocol)
    members.append(m)
    described = broker.wait_for_group(group, members=1, timeout_ms=60_000)
    assert described["type"] == protocol and described["state"] == "Stable"
    assert sorted(described["members"][0]["assignment"]) == [f"{topic}-0", f"{topic}-1"]
    m.wait_records(6, timeout=60)  # the member's own events: it has read everything
    m.commit()
    rows = broker.wait_for_committed(group, topic, timeout_ms=30_000)
    assert sorted((r["partition"], r["committed_offset"], r["lag"]) for r in rows) == [(0, 3, 0), (1, 3, 0)]
    m.close()
    empty = broker.wait_for_group(group, state="Empty", assigned=False, timeout_ms=30_000)
    assert empty["members"] == []


@pytest.mark.java
@pytest.mark.share_groups
def test_share_group(broker, members):
    from compat_tests.clients.java import JavaClient
    from compat_tests.share.members import ShareConsumer

    topic = new_topic(broker, 1)
    group = f"sg-{topic}"
    JavaClient(broker.bootstrap).admin({"op": "incrementalAlterConfigs", "resources": [
        {"type": "GROUP", "name": group, "ops": [{"name": "share.auto.offset.reset", "value": "earliest"}]}]})
    c = ShareConsumer(broker.bootstrap, group, topic, client="java", ack_mode="implicit")
    members.append(c)
    described = broker.wait_for_group(group, members=1, timeout_ms=60_000)
    assert described["type"] == "share" and described["members"][0]["assignment"] == [f"{topic}-0"]


@pytest.mark.streams_groups
def test_streams_group(broker):
    from compat_tests.test_streams_groups import heartbeat, join_until_assigned, wait_coordinator
    from kafkalite.protocol.client import WireClient

    app = f"sgw-{uuid.uuid4().hex[:8]}"
    source = new_topic(broker, 2)
    member = str(uuid.uuid4())
    with WireClient(broker.bootstrap) as c:
        wait_coordinator(c, app)
        joined = join_until_assigned(c, app, source, member)
        # the member confirms the tasks it was given: the group is then Stable
        heartbeat(c, app, member, joined.member_epoch, active=joined.active_tasks, others=())
        described = broker.wait_for_group(app, members=1, timeout_ms=30_000)
    assert described["type"] == "streams" and described["members"][0]["active"]


@pytest.mark.java
def test_wait_idle_names_the_open_java_transaction(broker, tmp_path):
    from compat_tests.txn import java_txn, time_out_while

    topic = new_topic(broker, 1)
    tid = f"tx-{topic}"

    def watch() -> None:
        # the Java producer has written its record and holds the transaction open
        (open_record,) = broker.wait_for_records(topic, isolation="read_uncommitted", timeout_ms=60_000)
        assert (open_record["value"], open_record["transaction"]) == ("late", "open")
        with pytest.raises(AssertionError) as failed:
            broker.wait_idle(timeout_ms=300)
        assert failed.value.status == 408
        busy = failed.value.state["busy"]
        assert any(b["what"] == "transaction" and b["transactional_id"] == tid for b in busy), busy
        assert any(b["what"] == "partition" and b["topic"] == topic for b in busy), busy
        assert broker.records(topic, isolation="read_committed") == []

    # a transaction timeout far away: the producer commits once watch() has looked
    assert time_out_while(java_txn, broker.bootstrap, tid, topic, 120_000, tmp_path / "commit", watch) == "NONE"
    assert broker.wait_idle(timeout_ms=30_000)["idle"] is True
    assert [(r["value"], r["transaction"]) for r in broker.records(topic)] == [("late", "committed")]


def cli(broker, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KAFKALITE_CONTROLS_URL": broker.controls_url}
    return subprocess.run([sys.executable, "-m", "kafkalite", "control", *args], capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.java
def test_every_wait_from_the_command_line(broker):
    from compat_tests.clients.java import JavaClient

    topic = new_topic(broker, 1)
    JavaClient(broker.bootstrap).produce(topic, [Msg(value=b"one", key=b"a"), Msg(value=b"two", key=b"b")],
                                         partition=0)
    out = cli(broker, "records", f"topic={topic}")
    assert out.returncode == 0, out.stderr
    assert [r["value"] for r in json.loads(out.stdout)] == ["one", "two"]
    out = cli(broker, "wait-records", f"topic={topic}", "key=b")
    assert out.returncode == 0 and json.loads(out.stdout)["records"][0]["value"] == "two"
    out = cli(broker, "expect-no-records", f"topic={topic}", "for_ms=100")
    assert out.returncode == 0 and json.loads(out.stdout)["records"] == []
    out = cli(broker, "wait-idle")
    assert out.returncode == 0 and json.loads(out.stdout)["idle"] is True
    # unmet: exit status 1, the reason on stderr, {"error", "state"} on stdout
    out = cli(broker, "wait-records", f"topic={topic}", "count=3", "timeout_ms=200")
    assert out.returncode == 1 and "2 of 3" in out.stderr
    answer = json.loads(out.stdout)
    assert set(answer) == {"error", "state"} and len(answer["state"]["matched"]) == 2
    out = cli(broker, "wait-group", "group=nobody", "timeout_ms=100")
    assert out.returncode == 1 and "no group 'nobody'" in out.stderr and json.loads(out.stdout)["state"] is None
    out = cli(broker, "wait-committed", "group=nobody", f"topic={topic}", "timeout_ms=100")
    assert out.returncode == 1 and json.loads(out.stdout)["state"]["short"][0]["committed_offset"] is None
