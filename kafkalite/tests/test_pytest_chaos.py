"""pytest --kafkalite-chaos SEED: a user's test session under seeded chaos (real brokers started by
the plugin, a real confluent-kafka producer), its report, and the replay of a failing test."""

from __future__ import annotations

import json
import re
import shlex
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kafkalite import pytest_chaos
from kafkalite.admin import AdminConnection
from kafkalite.broker.chaos import ERRORS, PROFILES, draw, unknown_draw
from kafkalite.tests import suite_brokers
from kafkalite.tests.test_pytest_plugin import run

pytest_plugins = ["pytester"]

# Each test produces one record per Produce request from a fixed client id and writes what the
# broker's chaos answered (its state, that client's Produce faults) to $CHAOS_OUT/<test>.json.
USER_TESTS = textwrap.dedent("""
    import json, os
    from confluent_kafka import Producer

    def produce(bootstrap, topic, n):
        p = Producer({"bootstrap.servers": bootstrap, "client.id": "replay-producer", "enable.idempotence": True,
                      "acks": "all", "linger.ms": 0, "socket.timeout.ms": 3000, "request.timeout.ms": 3000})
        errors = []
        for i in range(n):
            p.produce(topic, b"v", key=b"k%d" % i, on_delivery=lambda err, _m: errors.append(err) if err else None)
            assert p.flush(60) == 0
        assert errors == []

    def dump(name, broker):
        state = broker.controls.call("chaos")
        faults = (broker.controls.call("chaos-log", api="Produce", client_id="replay-producer")
                  if state["enabled"] else None)
        with open(os.path.join(os.environ["CHAOS_OUT"], name + ".json"), "w") as f:
            json.dump({"state": state, "produce": faults}, f)

    def test_passes(kafkalite_broker, kafka_topic):
        produce(kafkalite_broker.bootstrap, kafka_topic, 25)
        dump("test_passes", kafkalite_broker)

    def test_fails(kafkalite_broker, kafka_topic):
        produce(kafkalite_broker.bootstrap, kafka_topic, 25)
        dump("test_fails", kafkalite_broker)
        assert False, "the application's own check"

    def test_fresh(kafkalite_fresh):
        dump("test_fresh", kafkalite_fresh)
""")


def _session(pytester: pytest.Pytester, out: Path, *args: str, **env: str) -> tuple[str, dict[str, Any]]:
    out.mkdir()
    result = run(pytester, *args, CHAOS_OUT=str(out), **env)
    text = result.stdout.str()
    assert "Traceback" not in result.stderr.str(), result.stderr.str()
    dumps = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    return text, dumps


def _faults(dump: dict[str, Any]) -> list[tuple[int, str, str | None, int | None]]:
    return [(e["api_seq"], e["fault"], e.get("error"), e.get("delay_ms")) for e in dump["produce"]]


def _drawn_by_the_seed(seed: int, profile: str, faults: list[tuple[int, str, str | None, int | None]]) -> None:
    """Every fault in the log is the one the seed draws for that request (broker.chaos.draw, and
    unknown_draw for a topic still new to the client, which draw left alone)."""
    for api_seq, fault, error, delay_ms in faults:
        chosen = draw(seed, PROFILES[profile], "replay-producer", 0, api_seq)
        if fault == "unknown_topic":
            assert chosen.fault is None and unknown_draw(seed, PROFILES[profile], "replay-producer", 0, api_seq), (
                api_seq, fault, chosen)
            continue
        assert chosen.fault == fault, (api_seq, fault, chosen)
        if fault == "delay":
            assert chosen.pick == delay_ms
        if fault == "error":
            assert ERRORS[0][chosen.pick].name.upper() == error


def test_chaos_from_the_command_line_reports_faults_and_replays_a_failing_test(pytester: pytest.Pytester,
                                                                               tmp_path: Path):
    pytester.makepyfile(test_user=USER_TESTS)
    text, dumps = _session(pytester, tmp_path / "first", "--kafkalite-chaos", "7",
                           "--kafkalite-chaos-profile", "harsh")
    assert re.search(r"1 failed, 2 passed", text), text
    assert "kafkalite chaos: seed 7, profile harsh" in text  # the header
    for name in ("test_passes", "test_fails", "test_fresh"):
        assert dumps[name]["state"]["enabled"] and dumps[name]["state"]["seed"] == 7, dumps[name]
        assert dumps[name]["state"]["profile"] == "harsh"
    first = {name: _faults(dumps[name]) for name in ("test_passes", "test_fails")}
    assert first["test_passes"] and first["test_fails"], "seed 7 (harsh) faulted none of 25 Produce requests"
    # each test's faults are drawn from its own requests: chaos began anew for each
    assert first["test_passes"] == first["test_fails"]
    _drawn_by_the_seed(7, "harsh", first["test_passes"])

    # the failing test's own report section
    section = text[text.index("kafkalite chaos (call)"):]
    assert "seed 7, profile harsh" in section
    assert re.search(r"\bProduce #\d+ from client 'replay-producer': (error|drop|delay|close)", section), section
    # the session's section: seed, every test's faults, the replay line of the failing one
    summary = text[text.rindex("kafkalite chaos ="):]
    assert re.search(r"seed 7, profile harsh; \d+ faults in 3 test\(s\)", summary), summary
    assert re.search(r"FAILED test_user.py::test_fails: \d+ faults?: .*Produce (error|drop|delay|close) \d+", summary)
    assert re.search(r"passed test_user.py::test_passes: \d+ faults?: ", summary), summary
    assert re.search(r"passed test_user.py::test_fresh: (no faults|\d+ faults?: )", summary), summary
    replay = re.search(r"replay: (pytest .*)", summary)
    assert replay is not None and replay.group(1) == (
        "pytest --kafkalite-chaos 7 --kafkalite-chaos-profile harsh test_user.py::test_fails"), summary

    # the replay line, run as printed: the failing test alone meets the same Produce faults
    args = shlex.split(replay.group(1))[1:]
    text, dumps = _session(pytester, tmp_path / "replay", *args)
    assert re.search(r"1 failed in", text), text
    assert set(dumps) == {"test_fails"}
    assert _faults(dumps["test_fails"]) == first["test_fails"]


def test_a_random_seed_from_the_environment_is_printed_and_no_option_is_no_chaos(pytester: pytest.Pytester,
                                                                               tmp_path: Path):
    pytester.makepyfile(test_user=USER_TESTS)
    pytester.makeini("[pytest]\nkafkalite_chaos_profile = harsh\n")
    text, dumps = _session(pytester, tmp_path / "random", "-k", "test_passes or test_fresh", KAFKALITE_CHAOS="random")
    header = re.search(r"kafkalite chaos: seed (\d+) \(drawn at random for this session\), profile harsh", text)
    assert header is not None, text
    seed = int(header.group(1))
    assert f"seed {seed} (drawn at random), profile harsh" in text[text.rindex("kafkalite chaos ="):]
    assert dumps["test_passes"]["state"]["seed"] == dumps["test_fresh"]["state"]["seed"] == seed
    _drawn_by_the_seed(seed, "harsh", _faults(dumps["test_passes"]))

    text, dumps = _session(pytester, tmp_path / "none", "-k", "test_passes or test_fresh")
    assert re.search(r"2 passed", text), text
    assert "kafkalite chaos" not in text
    assert dumps["test_passes"]["state"] == {"enabled": False}
    assert dumps["test_fresh"]["state"] == {"enabled": False}


def test_the_fixtures_admin_connection_sends_again_once_after_a_closed_connection():
    """The kafka_topic fixtures' requests meet chaos too: a connection the broker closes is opened
    again and the request sent once more (Metadata is faulted, CreateTopics is not)."""
    with suite_brokers.running(controls=0) as broker, AdminConnection(broker.bootstrap) as admin:
        admin.create_topic("closed-once", 2)
        broker.controls.call("close-connections", api="Metadata", count=1)
        admin.wait_for_topic("closed-once", 2)
        assert broker.controls.call("list-faults") == []  # the close happened
        broker.controls.call("close-connections", api="Metadata", count=2)
        with pytest.raises(ConnectionError):
            admin.metadata(["closed-once"])


def test_the_plugin_knows_the_brokers_profiles():
    assert pytest_chaos.PROFILES == tuple(PROFILES)
