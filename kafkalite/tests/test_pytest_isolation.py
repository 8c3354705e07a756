"""The isolation fixtures in a throwaway project (pytester, in a subprocess as a user's pytest
runs): `kafka_clean` gives each test a reset session broker, `kafkalite_fresh` a broker of its
own, the ini `kafkalite_seed` seeds both; and each costs less than a broker started per test
(bench.isolation prints the figures against its targets)."""

from __future__ import annotations

import json
import os
import statistics
import textwrap
from pathlib import Path

import pytest

from bench.isolation import KINDS, PROJECT_CONFTEST, PROJECT_TESTS
from kafkalite.tests.test_pytest_plugin import run

pytest_plugins = ["pytester"]

# the plugin and the broker of this checkout, whatever kafkalite is installed
CHECKOUT = os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")) if p)


def test_each_test_sees_an_empty_broker(pytester: pytest.Pytester):
    pytester.makepyfile(test_user=textwrap.dedent("""
        import pytest
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic

        import kafkalite


        def _leave_things_behind(bootstrap):
            admin = AdminClient({"bootstrap.servers": bootstrap})
            assert set(admin.list_topics(timeout=10).topics) == set()
            admin.create_topics([NewTopic("left-behind", 2, 1)])["left-behind"].result(10)
            producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx"})
            producer.init_transactions(10)
            producer.begin_transaction()
            producer.produce("left-behind", value=b"x", partition=0)
            producer.flush(10)


        @pytest.mark.parametrize("i", range(3))
        def test_clean(i, kafka_clean, kafkalite_broker):
            assert kafka_clean == kafkalite_broker.bootstrap
            _leave_things_behind(kafka_clean)


        @pytest.mark.parametrize("i", range(3))
        def test_fresh(i, kafkalite_fresh, kafkalite_broker):
            assert isinstance(kafkalite_fresh, kafkalite.Broker)
            assert kafkalite_fresh.bootstrap != kafkalite_broker.bootstrap
            assert kafkalite_fresh.controls.reset()["topics"] == []
            _leave_things_behind(kafkalite_fresh.bootstrap)
    """))
    result = run(pytester, PYTHONPATH=CHECKOUT)
    result.assert_outcomes(passed=6)


def test_kafkalite_seed_ini_seeds_the_session_and_fresh_brokers(pytester: pytest.Pytester):
    (pytester.path / "fixtures").mkdir()
    (pytester.path / "fixtures" / "seed.json").write_text(json.dumps({
        "topics": [{"name": "orders", "partitions": 2, "records": [{"key": "k", "value": {"n": 1}}]}],
        "groups": [{"group": "billing", "offsets": {"orders": {"0": 1}}}]}))
    pytester.makeini("[pytest]\nkafkalite_seed = fixtures/seed.json\n")
    pytester.makepyfile(test_user=textwrap.dedent("""
        from confluent_kafka.admin import AdminClient


        def _topics(bootstrap):
            return AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics


        def test_session_broker_is_seeded_and_a_deletion_is_undone_by_the_reset(kafka_clean):
            assert len(_topics(kafka_clean)["orders"].partitions) == 2
            admin = AdminClient({"bootstrap.servers": kafka_clean})
            admin.delete_topics(["orders"])["orders"].result(10)


        def test_after_reset(kafka_clean):
            assert "orders" in _topics(kafka_clean)


        def test_fresh_broker_is_seeded(kafkalite_fresh):
            assert len(_topics(kafkalite_fresh.bootstrap)["orders"].partitions) == 2


        def test_fails_with_the_fresh_brokers_log(kafkalite_fresh):
            assert kafkalite_fresh.bootstrap == "not this"
    """))
    result = run(pytester, PYTHONPATH=CHECKOUT)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*Captured kafkalite_fresh broker log call*", "*created topic orders*"])


def test_the_fixtures_cost_less_than_a_broker_per_test(pytester: pytest.Pytester, tmp_path):
    """bench.isolation's project: ten tests of each kind; kafka_clean and kafkalite_fresh each
    cost well under a broker started per test (medians of setup + call + teardown; the figures
    against the targets are bench.isolation's: a shared machine's load moves them)."""
    pytester.makepyfile(test_isolation=PROJECT_TESTS)
    pytester.makeconftest(PROJECT_CONFTEST)
    out = tmp_path / "durations.json"
    result = run(pytester, ISOLATION_DURATIONS=str(out), PYTHONPATH=CHECKOUT)
    result.assert_outcomes(passed=40)
    durations = json.loads(out.read_text())
    medians = {kind: statistics.median(ms for nodeid, ms in durations.items() if f"::test_{kind}[" in nodeid)
               for kind in KINDS}
    assert medians["clean"] < medians["running"] / 3, medians
    assert medians["fresh"] < medians["running"] / 3, medians
