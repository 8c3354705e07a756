"""The pytest plugin, used from throwaway test projects (pytester, in a subprocess as a user's
pytest would run it)."""

from __future__ import annotations

import os
from pathlib import Path
import re
import textwrap

import pytest

import kafkalite
from kafkalite.tests import suite_brokers

pytest_plugins = ["pytester"]


# A user's project with packages of its own called `storage`, `protocol` and `broker`, imported
# by its conftest before any fixture runs: none may shadow ours, in the broker or in the plugin.
USER_PACKAGES = {
    "storage/__init__.py": "MINE = True\n",
    "protocol/__init__.py": "MINE = True\n",
    "broker/__init__.py": "MINE = True\n",
    "conftest.py": "import storage, protocol, broker\n",
}


@pytest.fixture
def project(pytester: pytest.Pytester):
    for path, text in USER_PACKAGES.items():
        p = pytester.path / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return pytester


def run(pytester: pytest.Pytester, *args: str, **env: str):
    saved = {k: os.environ.get(k) for k in ["KAFKA_BOOTSTRAP", *env]}
    os.environ.pop("KAFKA_BOOTSTRAP", None)
    os.environ.update(env)
    try:
        # hypothesis' plugin is installed here for other tests and costs a second per session
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-rA", *args,
                                             timeout=120)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_fixtures_in_a_project_with_its_own_storage_package(project: pytest.Pytester):
    project.makepyfile(test_user=textwrap.dedent("""
        import os, re
        import storage, protocol, broker
        from kafkalite.admin import AdminConnection

        def test_own_packages_are_not_shadowed():
            assert storage.MINE and protocol.MINE and broker.MINE

        def test_bootstrap_is_a_live_broker(kafka_bootstrap, kafkalite_broker):
            assert re.fullmatch(r"127\\.0\\.0\\.1:\\d+", kafka_bootstrap)
            assert kafkalite_broker.bootstrap == kafka_bootstrap
            with open("broker.pid", "w") as f:
                f.write(str(kafkalite_broker.pid))
            with AdminConnection(kafka_bootstrap) as c:
                assert 3 in c.versions and 18 in c.versions

        def test_fresh_topic(kafka_topic, kafka_bootstrap):
            assert kafka_topic.startswith("test_fresh_topic-")
            with AdminConnection(kafka_bootstrap) as c:
                (t,) = c.metadata([kafka_topic]).topics
                assert t.name == kafka_topic and len(t.partitions) == 1

        def test_topics_differ_between_tests(kafka_topic_factory):
            assert kafka_topic_factory() != kafka_topic_factory()
    """))
    result = run(project)
    result.assert_outcomes(passed=4)
    pid = int((project.path / "broker.pid").read_text())
    # torn down with the session
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_topic_with_partitions_and_configs(project: pytest.Pytester):
    project.makepyfile(test_user=textwrap.dedent("""
        import pytest
        from kafkalite.admin import AdminConnection

        @pytest.mark.kafka_topic(partitions=3, configs={"cleanup.policy": "compact"})
        def test_three(kafka_topic, kafka_bootstrap):
            with AdminConnection(kafka_bootstrap) as c:
                (t,) = c.metadata([kafka_topic]).topics
                assert len(t.partitions) == 3

        def test_factory(kafka_topic_factory, kafka_bootstrap):
            name = kafka_topic_factory(partitions=2, name="explicit-name")
            assert name == "explicit-name"
            with AdminConnection(kafka_bootstrap) as c:
                (t,) = c.metadata([name]).topics
                assert len(t.partitions) == 2
    """))
    run(project).assert_outcomes(passed=2)


def test_produce_and_consume_with_a_real_client(project: pytest.Pytester):
    pytest.importorskip("confluent_kafka")
    project.makepyfile(test_user=textwrap.dedent("""
        from confluent_kafka import Consumer, Producer, TopicPartition

        def test_roundtrip(kafka_bootstrap, kafka_topic):
            p = Producer({"bootstrap.servers": kafka_bootstrap})
            for i in range(10):
                p.produce(kafka_topic, value=b"v%d" % i, key=b"k")
            assert p.flush(10) == 0
            c = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "g", "enable.auto.commit": False})
            c.assign([TopicPartition(kafka_topic, 0, 0)])
            got = []
            while len(got) < 10:
                m = c.poll(10)
                assert m is not None and m.error() is None
                got.append(m.value())
            c.close()
            assert got == [b"v%d" % i for i in range(10)]
    """))
    run(project).assert_outcomes(passed=1)


def test_failing_test_report_carries_the_broker_log(project: pytest.Pytester):
    project.makeini("[pytest]\nkafkalite_log_level = DEBUG\n")
    project.makepyfile(test_user=textwrap.dedent("""
        from kafkalite.admin import AdminConnection

        def test_passes(kafka_bootstrap):
            AdminConnection(kafka_bootstrap).close()

        def test_fails(kafka_bootstrap):
            AdminConnection(kafka_bootstrap).close()
            assert False, "boom"

        def test_fails_without_broker():
            assert False
    """))
    result = run(project)
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert out.count("Captured kafkalite broker log call") == 1
    section = out.split("Captured kafkalite broker log call", 1)[1]
    assert "connection opened from" in section


def test_console_address_at_start_and_in_failing_reports(project: pytest.Pytester):
    project.makepyfile(test_user=textwrap.dedent("""
        import json, urllib.request

        def test_console_serves_the_session_broker(kafkalite_broker, kafka_topic):
            with urllib.request.urlopen(kafkalite_broker.console_url + "api/topics", timeout=10) as r:
                names = [t["name"] for t in json.load(r)["topics"]]
            assert kafka_topic in names

        def test_fails(kafka_bootstrap):
            assert False, "boom"
    """))
    # the plugin the subprocess loads by its entry point is this checkout's
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(kafkalite.__file__)))
    result = run(project, "--kafka-console", "0",
                 PYTHONPATH=os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p))
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    url = re.search(r"kafkalite console: (http://127\.0\.0\.1:\d+/) \(broker 127\.0\.0\.1:\d+\)", out)
    assert url, out
    # printed once, before the first test's result
    assert out.index(url.group(0)) < out.index("test_user.py")
    section = out.split("kafkalite console", 2)[2]
    assert section.lstrip(" -\n").startswith(f"{url.group(1)} (transactions: {url.group(1)}#/transactions")


def test_broker_settings_from_ini(project: pytest.Pytester):
    project.makeini("[pytest]\nkafkalite_config =\n    num.partitions=4\n    auto.create.topics.enable=true\n")
    project.makepyfile(test_user=textwrap.dedent("""
        from kafkalite.admin import AdminConnection

        def test_auto_created_topic_has_four_partitions(kafka_bootstrap):
            with AdminConnection(kafka_bootstrap) as c:
                c.metadata(["auto-created"], allow_auto_create=True)
                c.wait_for_topic("auto-created", 4)
    """))
    run(project).assert_outcomes(passed=1)


def test_bad_ini_setting_fails_with_the_brokers_message(project: pytest.Pytester):
    project.makeini("[pytest]\nkafkalite_config = num.partiton=4\n")
    project.makepyfile(test_user="def test_x(kafka_bootstrap):\n    pass\n")
    result = run(project)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*did you mean 'num.partitions'*"])


@pytest.mark.parametrize("how", ["option", "env"])
def test_external_broker(project: pytest.Pytester, how: str):
    project.makepyfile(test_user=textwrap.dedent("""
        import os
        from kafkalite.admin import AdminConnection

        def test_uses_the_external_broker(kafka_bootstrap, kafkalite_broker, kafka_topic):
            assert kafkalite_broker is None
            assert kafka_bootstrap == os.environ["EXPECTED_BOOTSTRAP"]
            with AdminConnection(kafka_bootstrap) as c:
                (t,) = c.metadata([kafka_topic]).topics
                assert t.name == kafka_topic
    """))
    with suite_brokers.running() as external:
        if how == "option":
            result = run(project, f"--kafka-bootstrap={external.bootstrap}", EXPECTED_BOOTSTRAP=external.bootstrap)
        else:
            result = run(project, EXPECTED_BOOTSTRAP=external.bootstrap, KAFKA_BOOTSTRAP=external.bootstrap)
        result.assert_outcomes(passed=1)


def test_controls_of_the_session_broker(project: pytest.Pytester):
    project.makepyfile(test_user=textwrap.dedent("""
        import pytest
        import kafkalite

        def test_controls(kafkalite_broker, kafkalite_controls):
            assert kafkalite_controls.url == kafkalite_broker.controls_url
            assert kafkalite_controls.url.startswith("http://127.0.0.1:")
            armed = kafkalite_controls.fail_requests(api="Metadata", error="NOT_COORDINATOR", count=5)
            assert [f["id"] for f in kafkalite_controls.list_faults()] == [armed["id"]]
            with pytest.raises(kafkalite.ControlFailed, match="no control named 'no-such'"):
                kafkalite_controls.no_such()

        def test_the_fault_of_the_test_before_is_gone(kafkalite_controls):
            assert kafkalite_controls.list_faults() == []
    """))
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(kafkalite.__file__)))
    result = run(project, PYTHONPATH=os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p))
    result.assert_outcomes(passed=2)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("how", ["option", "ini"])
def test_the_controls_port_can_be_chosen(project: pytest.Pytester, how: str):
    port = _free_port()
    project.makepyfile(test_user=textwrap.dedent(f"""
        def test_controls_on_the_chosen_port(kafkalite_broker, kafkalite_controls):
            assert kafkalite_broker.controls_url == "http://127.0.0.1:{port}/"
            assert kafkalite_controls.url == kafkalite_broker.controls_url
            kafkalite_controls.advance_clock(ms=1000)
    """))
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(kafkalite.__file__)))
    args: list[str] = []
    if how == "option":
        args.append(f"--kafkalite-controls=127.0.0.1:{port}")
    else:
        project.makeini(f"[pytest]\nkafkalite_controls = 127.0.0.1:{port}\n")
    result = run(project, *args, PYTHONPATH=os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p))
    result.assert_outcomes(passed=1)


def test_controls_against_an_external_broker_fail_with_the_reason(project: pytest.Pytester):
    project.makepyfile(test_user=textwrap.dedent("""
        def test_controls(kafkalite_controls):
            pass
    """))
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(kafkalite.__file__)))
    with suite_brokers.running() as external:
        result = run(project, KAFKA_BOOTSTRAP=external.bootstrap,
                     PYTHONPATH=os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*kafkalite_controls needs the kafkalite broker the session starts*"])


def test_a_session_broker_of_three_nodes(project: pytest.Pytester):
    project.makepyfile(test_user=textwrap.dedent("""
        from kafkalite.admin import AdminConnection

        def test_three_nodes(kafkalite_broker, kafka_bootstrap, kafkalite_controls):
            assert sorted(kafkalite_broker.nodes) == [1, 2, 3]
            assert kafkalite_broker.nodes[1] == kafka_bootstrap
            assert len(set(kafkalite_broker.nodes.values())) == 3
            with AdminConnection(kafka_bootstrap) as c:
                brokers = sorted((b.node_id, f"{b.host}:{b.port}") for b in c.metadata([]).brokers)
            assert brokers == sorted(kafkalite_broker.nodes.items())
            state = kafkalite_controls.node_down(node=3)
            assert state["down"] == [3]
    """))
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(kafkalite.__file__)))
    result = run(project, "--kafkalite-nodes=3",
                 PYTHONPATH=os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p))
    result.assert_outcomes(passed=1)


def test_secured_listener_from_ini(pytester: pytest.Pytester):
    """kafkalite_listeners + kafkalite_tls_self_signed + kafkalite_config: a SASL_SSL listener
    beside the fixtures' PLAINTEXT one, used by a real client trusting the broker's CA."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
    pytester.makeini(textwrap.dedent(f"""
        [pytest]
        kafkalite_listeners =
            PLAINTEXT://127.0.0.1:0
            SASL_SSL://127.0.0.1:0
        kafkalite_tls_self_signed = true
        kafkalite_config =
            listener.name.sasl_ssl.plain.sasl.jaas.config={jaas}
    """))
    pytester.makepyfile(test_user=textwrap.dedent("""
        from confluent_kafka import Producer

        def test_produce_over_sasl_ssl(kafkalite_broker, kafka_topic):
            assert kafkalite_broker.ca_path.exists()
            p = Producer({"bootstrap.servers": kafkalite_broker.listeners["SASL_SSL"],
                          "security.protocol": "SASL_SSL", "ssl.ca.location": str(kafkalite_broker.ca_path),
                          "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"})
            p.produce(kafka_topic, b"secret hello")
            assert p.flush(20) == 0
    """))
    # this checkout's kafkalite (and plugin), whatever copy is installed
    root = str(Path(__file__).resolve().parents[2])
    result = run(pytester, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p))
    result.assert_outcomes(passed=1)


REPORTED_TEST = textwrap.dedent("""
    from confluent_kafka import Consumer, Producer

    def test_order_is_shipped(kafka_bootstrap, kafka_topic, kafkalite_broker):
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "client.id": "order-service",
                             "transactional.id": "orders-tx"})
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.produce(kafka_topic, key=b"order-7", value=b'{"state": "paid"}', headers=[("trace", b"t-7")])
        producer.flush(15)  # sent, never committed: the transaction stays open
        consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "shipping",
                             "client.id": "shipping-service", "auto.offset.reset": "earliest",
                             "isolation.level": "read_committed"})
        consumer.subscribe([kafka_topic])
        kafkalite_broker.wait_for_group("shipping", timeout_ms=30_000)
        assert consumer is None, "the order was never shipped"

    def test_passes(kafka_bootstrap):
        pass
""")


def test_failing_test_report_shows_what_the_broker_saw(project: pytest.Pytester):
    project.makepyfile(test_user=REPORTED_TEST)
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert out.count("kafkalite: what the broker saw (call)") == 1  # the failed test's only
    section = out.split("kafkalite: what the broker saw (call)", 1)[1].split("Captured kafkalite broker log", 1)[0]
    # the request log of the test, with client ids and APIs
    assert "order-service" in section and "InitProducerId v" in section and "Produce v" in section
    assert "shipping-service" in section and "JoinGroup v" in section
    # the topic's records, the open transaction's record marked so
    assert 'key="order-7" value="{\\"state\\": \\"paid\\"}" trace="t-7" [open]' in section
    # the group, its state and its member's assignment
    assert "shipping: classic Stable" in section and "shipping-service shipping-service-" in section
    # the open transaction
    assert "orders-tx: Ongoing (OPEN)" in section


def test_report_of_all_tests_or_none(project: pytest.Pytester):
    project.makepyfile(test_user=REPORTED_TEST)
    out = run(project, "--kafkalite-report=all").stdout.str()
    assert out.count("kafkalite: what the broker saw (call)") == 2
    out = run(project, "--kafkalite-report=off").stdout.str()
    assert "kafkalite: what the broker saw" not in out
