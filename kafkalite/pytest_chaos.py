"""Seeded chaos across a pytest session (``pytest --kafkalite-chaos SEED``), for the kafkalite plugin.

Every broker the plugin's fixtures start runs chaos (broker.chaos) with the session's seed and
profile. Replay works per test: before each test that uses the session broker its chaos starts
again (the ``chaos`` control: counters and log begin anew), and a ``kafkalite_fresh`` broker
starts with it, so the faults a test meets are drawn from the seed and that test's own requests
alone, whatever ran before it; ``pytest --kafkalite-chaos SEED NODEID`` meets them again.

Each test's report carries what it met (``report.kafkalite_chaos``, serialisable, so that
pytest-xdist's workers hand it to the controller); a failing test's report has a section naming
the seed, its faults and the command that replays it, and the session ends with a terminal
section of the seed, profile and every test's faults. ``random`` draws a seed, once per session
(given to xdist's workers), and prints it.
"""

from __future__ import annotations

import collections
import os
import secrets
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

PROFILES = ("gentle", "default", "harsh")  # broker.chaos.PROFILES, without importing the broker
_SEED_KEY = "kafkalite_chaos_seed"  # in xdist's workerinput: the seed the controller resolved
_MAX_LISTED = 50  # faults listed one by one in a failing test's section


@dataclass(frozen=True)
class ChaosSettings:
    seed: int
    profile: str
    drawn: bool  # drawn at random for this session

    def broker_settings(self) -> dict[str, Any]:
        """The keywords of kafkalite.start() and ForkServer.start() that turn it on."""
        return {"chaos": self.seed, "chaos_profile": self.profile}

    def replay_command(self, nodeid: str) -> str:
        profile = "" if self.profile == "default" else f" --kafkalite-chaos-profile {self.profile}"
        return f"pytest --kafkalite-chaos {self.seed}{profile} {shlex.quote(nodeid)}"


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafkalite")
    group.addoption("--kafkalite-chaos", default=None, metavar="SEED",
                    help="every kafkalite broker the fixtures start injects faults a correct Kafka client "
                         "survives, drawn from SEED (an integer, or 'random'); the session ends with the faults "
                         "each test met and how to replay one (default: ini kafkalite_chaos, $KAFKALITE_CHAOS)")
    group.addoption("--kafkalite-chaos-profile", default=None, choices=PROFILES,
                    help="how often chaos faults hit (default: ini kafkalite_chaos_profile, "
                         "$KAFKALITE_CHAOS_PROFILE, else default)")
    parser.addini("kafkalite_chaos", default="", help="chaos seed of the kafkalite brokers: see --kafkalite-chaos")
    parser.addini("kafkalite_chaos_profile", default="", help="gentle | default | harsh: see --kafkalite-chaos-profile")


def settings(config: pytest.Config) -> ChaosSettings | None:
    """The session's chaos, from the option, the ini file or the environment (in that order);
    None: no chaos. A pytest-xdist worker takes the seed its controller resolved."""
    profile = (config.getoption("kafkalite_chaos_profile", None) or config.getini("kafkalite_chaos_profile")
               or os.environ.get("KAFKALITE_CHAOS_PROFILE") or "default")
    if profile not in PROFILES:
        raise pytest.UsageError(f"kafkalite chaos profile: expected one of {', '.join(PROFILES)}, got {profile!r}")
    worker = getattr(config, "workerinput", None)
    if worker is not None and _SEED_KEY in worker:
        seed, drawn = worker[_SEED_KEY]
        return None if seed is None else ChaosSettings(seed, profile, drawn)
    text = (config.getoption("kafkalite_chaos", None) or config.getini("kafkalite_chaos")
            or os.environ.get("KAFKALITE_CHAOS") or "").strip()
    if not text:
        return None
    if text == "random":
        return ChaosSettings(secrets.randbelow(2**31), profile, drawn=True)
    try:
        return ChaosSettings(int(text), profile, drawn=False)
    except ValueError:
        raise pytest.UsageError(f"kafkalite chaos: expected an integer seed or 'random', got {text!r}") from None


def api_name(snake: str) -> str:
    """Kafka's name of an API from the chaos log's (kio's): init_producer_id -> InitProducerId."""
    return "".join(word.capitalize() for word in snake.split("_"))


def summarize(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """A test's chaos log as counts: {"total": n, "by_api": {Api: {fault or fault:ERROR: n}}}."""
    by_api: dict[str, collections.Counter[str]] = {}
    for e in entries:
        kind = f"{e['fault']}:{e['error']}" if e.get("error") else e["fault"]
        by_api.setdefault(api_name(e["api"]), collections.Counter())[kind] += 1
    return {"total": len(entries), "by_api": {api: dict(c) for api, c in by_api.items()}}


def describe(summary: dict[str, Any]) -> str:
    """`3 faults: Produce error 2 (NOT_LEADER_OR_FOLLOWER 1, NOT_ENOUGH_REPLICAS 1); Fetch close 1`."""
    if not summary["total"]:
        return "no faults"
    parts = []
    for api, kinds in sorted(summary["by_api"].items()):
        per_fault: dict[str, collections.Counter[str]] = {}
        for kind, n in kinds.items():
            fault, _, error = kind.partition(":")
            per_fault.setdefault(fault, collections.Counter())[error] += n
        words = []
        for fault in ("error", "drop", "delay", "close"):
            if fault in per_fault:
                errors = per_fault[fault]
                named = ", ".join(f"{e} {n}" for e, n in sorted(errors.items()) if e)
                words.append(f"{fault} {sum(errors.values())}" + (f" ({named})" if named else ""))
        parts.append(f"{api} " + ", ".join(words))
    total = summary["total"]
    return f"{total} fault{'s' if total != 1 else ''}: " + "; ".join(parts)


def _entry_line(e: dict[str, Any]) -> str:
    what = e["fault"] + (f" {e['error']}" if e.get("error") else "") + (
        f" {e['delay_ms']} ms" if e.get("delay_ms") is not None else "")
    return f"  {api_name(e['api'])} #{e['api_seq']} from client {e['client_id']!r}: {what}"


@dataclass
class _Outcome:
    summary: dict[str, Any]
    failed: bool = False
    error: str | None = None  # why the faults could not be read


@dataclass(eq=False)
class ChaosPlugin:
    """Registered by the kafkalite plugin when the session runs under chaos. `broker_of(item)`
    answers the broker a test talks to (its kafkalite_fresh one, else the session's when the test
    uses it), `session_broker()` the session's broker once started."""

    chaos: ChaosSettings
    broker_of: Callable[[pytest.Item], Any]
    session_broker: Callable[[], Any]
    fresh_key: pytest.StashKey[Any]  # where the kafkalite plugin keeps a test's kafkalite_fresh broker
    tests: dict[str, _Outcome] = field(default_factory=dict)

    def pytest_report_header(self) -> str:
        drawn = " (drawn at random for this session)" if self.chaos.drawn else ""
        return f"kafkalite chaos: seed {self.chaos.seed}{drawn}, profile {self.chaos.profile}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist: every worker runs with the seed drawn here."""
        node.workerinput[_SEED_KEY] = (self.chaos.seed, self.chaos.drawn)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Chaos anew for this test on the session broker (a broker started during the setup
        starts with it), so that its faults depend on its own requests only."""
        broker = self.session_broker()
        if broker is None or not broker.controls_url or self.broker_of(item) is None:
            return
        broker.controls.call("chaos", seed=self.chaos.seed, profile=self.chaos.profile)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        broker = self.broker_of(item)
        if broker is None or (report.when == "teardown" and item.stash.get(self.fresh_key, None) is broker):
            return  # a kafkalite_fresh broker is gone by then: its faults are those the call's report counted
        entries: list[dict[str, Any]] = []
        error = None
        if not broker.controls_url:
            error = "the broker serves no controls (pip install '.[console]'): its chaos log cannot be read"
        else:
            try:
                entries = broker.controls.call("chaos-log")
            except Exception as exc:  # noqa: BLE001 - a broker that died: say so in the report
                error = f"{type(exc).__name__}: {exc}"
        report.kafkalite_chaos = {"seed": self.chaos.seed, "profile": self.chaos.profile,  # type: ignore[attr-defined]
                                  "summary": summarize(entries), "error": error}
        if report.failed:
            lines = [f"seed {self.chaos.seed}, profile {self.chaos.profile}",
                     f"replay: {self.chaos.replay_command(item.nodeid)}",
                     error or describe(summarize(entries))]
            lines += [_entry_line(e) for e in entries[-_MAX_LISTED:]]
            if len(entries) > _MAX_LISTED:
                lines.insert(3, f"  (the last {_MAX_LISTED} of {len(entries)})")
            report.sections.append((f"kafkalite chaos ({report.when})", "\n".join(lines) + "\n"))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Runs where the terminal is (xdist's controller too): the test's latest count of faults."""
        met = getattr(report, "kafkalite_chaos", None)
        if met is None:
            return
        previous = self.tests.get(report.nodeid)
        failed = report.failed or (previous is not None and previous.failed)
        self.tests[report.nodeid] = _Outcome(met["summary"], failed, met["error"])

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        tr.section("kafkalite chaos")
        drawn = " (drawn at random)" if self.chaos.drawn else ""
        tr.write_line(f"seed {self.chaos.seed}{drawn}, profile {self.chaos.profile}; "
                      f"{sum(t.summary['total'] for t in self.tests.values())} faults in "
                      f"{len(self.tests)} test(s) that used a kafkalite broker")
        for nodeid, met in sorted(self.tests.items(), key=lambda kv: not kv[1].failed):
            status = "FAILED" if met.failed else "passed"
            tr.write_line(f"{status} {nodeid}: {met.error or describe(met.summary)}")
            if met.failed:
                tr.write_line(f"  replay: {self.chaos.replay_command(nodeid)}")
