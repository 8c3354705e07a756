"""pytest fixtures for testing against a Kafka-compatible broker (kafkalite by default).

Installed with kafkalite and loaded by pytest through its ``pytest11`` entry point.

Fixtures
    ``kafka_bootstrap`` (session): ``"host:port"`` of the broker.
    ``kafkalite_broker`` (session): the :class:`kafkalite.Broker` process, or ``None`` when the
        session runs against an external broker.
    ``kafka_topic`` (function): the name of a fresh topic, created for the test (one partition;
        ``@pytest.mark.kafka_topic(partitions=3, configs={"cleanup.policy": "compact"})`` to change).
    ``kafka_topic_factory`` (function): ``make(partitions=1, configs=None, name=None) -> name``
        for tests that need several topics.
    ``kafkalite_controls`` (function): the started broker's test controls
        (:class:`kafkalite.Controls`: ``kafkalite_controls.call("advance-clock", ms=1000)``); after
        the test, the faults it armed are cleared. The broker serves them on a free loopback port
        (``--kafkalite-controls`` / ini ``kafkalite_controls`` choose another) whenever the console
        extra is installed (``pip install '.[console]'`` in a kafkalite checkout); a test asking for
        them fails, with the reason, against an external broker or without it.
    ``schema_registry_url`` (session): ``"http://HOST:PORT/"`` of the started broker's schema
        registry (Confluent's REST API; served like the controls whenever Starlette and hypercorn
        are installed), or of ``--schema-registry-url`` / ``SCHEMA_REGISTRY_URL`` with an external broker.
    ``kafka_clean`` (function): the session broker reset before the test (the reset control: no
        topic, group, offset, transactional id, ACL or fault of an earlier test; the seed of
        ``kafkalite_seed`` put back); returns the bootstrap string. Needs the controls, as above.
    ``kafkalite_fresh`` (function): a broker of the test's own (:class:`kafkalite.Broker`, with the
        session's settings and seed, controls on when available), from a fork server started once
        per session (:mod:`kafkalite.forkserver`); killed and its data removed after the test; its
        log is attached to the report of a failing test ("Captured kafkalite_fresh broker log").

Topics are created with a real CreateTopics request (no Kafka client library needed) and
deleted when the test ends.

Options
    ``--kafka-bootstrap HOST:PORT`` (or the ``KAFKA_BOOTSTRAP`` environment variable): use a
        broker that is already running instead of starting kafkalite.
    ``--kafkalite-log-level LEVEL`` / ini ``kafkalite_log_level``: the started broker's log level.
    ini ``kafkalite_config``: lines of ``key=value`` broker settings (``num.partitions=3``).
    ini ``kafkalite_listeners``: lines of ``NAME://HOST:PORT`` listeners (port 0: a free one) for
        secured listeners beside the first, which the fixtures use (keep it PLAINTEXT); their
        settings go in ``kafkalite_config`` by Kafka's names (``listener.name.sasl_ssl.plain.sasl.jaas.config=...``).
        ``kafkalite_broker.listeners["SASL_SSL"]`` is a listener's address.
    ``--kafkalite-tls-self-signed`` / ini ``kafkalite_tls_self_signed``: a throwaway CA and server
        certificate for TLS listeners; ``kafkalite_broker.ca_path`` is the CA certificate clients trust.
    ``--kafka-console [HOST:]PORT`` / ini ``kafkalite_console``: serve the broker's web console
        (0 picks a free port). Its address is printed when the broker starts and in the report
        of every failing test that used the broker (needs the console extra).
    ``--schema-registry-url URL`` (or ``SCHEMA_REGISTRY_URL``): the registry of an external broker.
    ``--kafkalite-nodes N`` / ini ``kafkalite_nodes``: the started broker serves N node ids, each
        on its own port, over one copy of the data (``kafkalite --nodes N``).
    ``--kafkalite-controls [HOST:]PORT`` / ini ``kafkalite_controls``: where the started broker
        serves its test controls (default ``127.0.0.1:0``, a free port; ``kafkalite_broker.controls_url``).
    ini ``kafkalite_seed``: a seed file (``kafkalite --seed``; relative to the ini file's directory)
        for the session broker and every ``kafkalite_fresh`` broker.
    ini ``kafkalite_http_allowed_hosts``: Host names the brokers' HTTP endpoints answer besides their
        address and localhost (``kafkalite --http-allowed-hosts``), for controls reached by a name.
    ``KAFKALITE_CONTROLS_TOKEN`` (or ini ``kafkalite_controls_token``): the shared secret the brokers'
        controls ask for (``kafkalite --controls-token``); the fixtures send it.
    ``--kafkalite-chaos SEED|random`` / ini ``kafkalite_chaos`` / ``KAFKALITE_CHAOS`` (and
        ``--kafkalite-chaos-profile`` / ini ``kafkalite_chaos_profile`` / ``KAFKALITE_CHAOS_PROFILE``):
        every broker the fixtures start runs seeded chaos, begun anew for each test; the session ends
        with the faults each test met and the command that replays a failing one (kafkalite.pytest_chaos).

The broker runs as its own process (``python -P -m kafkalite``) on a free port for the whole
session and stops with it. When a test that uses it fails, the lines the broker logged during
that test are attached to the report ("Captured kafkalite broker log"), and so is what the
broker saw during the test ("kafkalite: what the broker saw": the test's requests with the
errors answered, the topics they named with their last records, the groups with their state
and lag, the open transactions; ``--kafkalite-report=off|failed|all``, ini ``kafkalite_report``).
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from kafkalite import pytest_chaos

_BROKER = pytest.StashKey[Any]()  # kafkalite.Broker, once started
_LOG_OFFSET = pytest.StashKey[int]()
_REPORT_SEQ = pytest.StashKey[int]()  # the request log's seq as the test started
_CHAOS = pytest.StashKey["pytest_chaos.ChaosSettings | None"]()
REPORT_MODES = ("off", "failed", "all")
_FIXTURES = {"kafka_bootstrap", "kafkalite_broker", "kafka_topic", "kafka_topic_factory", "kafkalite_controls",
             "schema_registry_url", "kafka_clean"}
_MAX_SECTION = 64 * 1024


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafkalite", "Kafka broker for tests (kafkalite)")
    group.addoption("--kafka-bootstrap", default=None, metavar="HOST:PORT",
                    help="run against this already-running Kafka-compatible broker instead of starting "
                         "kafkalite (default: the KAFKA_BOOTSTRAP environment variable)")
    group.addoption("--kafkalite-log-level", default=None, metavar="LEVEL",
                    help="log level of the kafkalite broker the session starts (default INFO)")
    group.addoption("--kafka-console", default=None, metavar="[HOST:]PORT",
                    help="serve the web console of the kafkalite broker the session starts on HOST:PORT "
                         "(0 picks a free port); its address is printed at the start and in failing tests' reports")
    group.addoption("--kafkalite-tls-self-signed", action="store_true", default=False,
                    help="give the kafkalite broker's TLS listeners a throwaway CA and certificate "
                         "(kafkalite_broker.ca_path)")
    parser.addini("kafkalite_listeners", type="linelist", default=[],
                  help="NAME://HOST:PORT listeners of the kafkalite broker (the first is the fixtures' one)")
    parser.addini("kafkalite_tls_self_signed", type="bool", default=False,
                  help="a throwaway CA and certificate for the kafkalite broker's TLS listeners")
    parser.addini("kafkalite_console", default="", help="[HOST:]PORT of the kafkalite broker's web console")
    group.addoption("--schema-registry-url", default=None, metavar="URL",
                    help="the schema registry of the external broker (default: the SCHEMA_REGISTRY_URL "
                         "environment variable); kafkalite's own serves one")
    group.addoption("--kafkalite-nodes", default=None, type=int, metavar="N",
                    help="node ids the kafkalite broker the session starts serves, each on its own port (default 1)")
    parser.addini("kafkalite_nodes", default="", help="node ids the kafkalite broker serves (kafkalite --nodes)")
    parser.addini("kafkalite_config", type="linelist", default=[],
                  help="broker settings KEY=VALUE for the kafkalite broker the session starts")
    parser.addini("kafkalite_log_level", default="INFO", help="log level of the kafkalite broker")
    parser.addini("kafkalite_seed", default="", help="a seed file for the kafkalite brokers (kafkalite --seed), "
                                                     "relative to the ini file's directory")
    group.addoption("--kafkalite-controls", default=None, metavar="[HOST:]PORT",
                    help="where the kafkalite broker the session starts serves its test controls "
                         "(default 127.0.0.1:0, a free loopback port)")
    parser.addini("kafkalite_controls", default="", help="[HOST:]PORT of the kafkalite broker's test controls")
    parser.addini("kafkalite_http_allowed_hosts", type="linelist", default=[],
                  help="Host names the kafkalite broker's HTTP endpoints answer besides their address and localhost")
    parser.addini("kafkalite_controls_token", default="",
                  help="the shared secret of the kafkalite broker's controls (default: $KAFKALITE_CONTROLS_TOKEN)")
    group.addoption("--kafkalite-report", default=None, choices=REPORT_MODES,
                    help="attach what the broker saw during a test (its requests, the topics they named with "
                         "their last records, groups and lag, open transactions) to the report of failed "
                         "tests (default), of all tests, or of none")
    parser.addini("kafkalite_report", default="failed", help="off | failed | all: see --kafkalite-report")
    pytest_chaos.addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "kafka_topic(partitions=1, configs=None): settings of the topic the kafka_topic fixture creates")
    chaos = pytest_chaos.settings(config)
    config.stash[_CHAOS] = chaos
    if chaos is not None:
        if external_bootstrap(config):
            raise pytest.UsageError(f"--kafkalite-chaos needs the kafkalite broker the session starts, not an "
                                    f"external one ({external_bootstrap(config)})")
        config.pluginmanager.register(
            pytest_chaos.ChaosPlugin(chaos, _test_broker, lambda: config.stash.get(_BROKER, None), _FRESH),
            "kafkalite-chaos")


def _chaos_settings(config: pytest.Config) -> dict[str, Any]:
    """The keywords that give a started broker the session's chaos (none without it)."""
    chaos = config.stash.get(_CHAOS, None)
    return {} if chaos is None else chaos.broker_settings()


def external_bootstrap(config: pytest.Config) -> str | None:
    return config.getoption("kafka_bootstrap", None) or os.environ.get("KAFKA_BOOTSTRAP") or None


def _broker_config(config: pytest.Config) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in config.getini("kafkalite_config"):
        key, sep, value = line.partition("=")
        if not sep:
            raise pytest.UsageError(f"kafkalite_config: expected KEY=VALUE, got {line!r}")
        out[key.strip()] = value.strip()
    return out


@pytest.fixture(scope="session")
def kafkalite_broker(pytestconfig: pytest.Config):
    """The kafkalite broker of this session, or None with --kafka-bootstrap / KAFKA_BOOTSTRAP."""
    if external_bootstrap(pytestconfig):
        yield None
        return
    broker = _start_broker(pytestconfig)
    try:
        yield broker
    finally:
        pytestconfig.stash[_BROKER] = None
        broker.close()


def _console(config: pytest.Config) -> str | None:
    return config.getoption("kafka_console", None) or config.getini("kafkalite_console") or None


def _controls(config: pytest.Config) -> str | None:
    """Where the controls are served: the option or ini value; by default a free loopback port
    whenever the endpoint's libraries are installed (the broker runs on this interpreter). A port
    asked for without them fails the broker's start with the install command."""
    chosen = config.getoption("kafkalite_controls", None) or config.getini("kafkalite_controls") or None
    if chosen:
        return chosen
    return "127.0.0.1:0" if _http_available() else None


def _registry_available() -> bool:
    """Whether the session broker can serve a schema registry: the HTTP endpoints' libraries and
    the schema libraries (the schema-registry extra) are installed. A user with only the console
    extra gets a broker without a registry, not a broker that cannot start."""
    from kafkalite.broker.schema_registry import missing_libraries

    return _http_available() and not missing_libraries()


def _http_available() -> bool:
    """Whether the libraries of the broker's HTTP endpoints (controls, schema registry) are
    installed: found, not imported."""
    import importlib.util

    from kafkalite.broker.startup_checks import HTTP_PACKAGES

    return all(importlib.util.find_spec(m) is not None for m in HTTP_PACKAGES)


def _http_settings(config: pytest.Config) -> dict[str, Any]:
    """The brokers' allowed Host names and controls token (ini, else the token's environment
    variable, which the broker and kafkalite.Controls read themselves)."""
    token = config.getini("kafkalite_controls_token") or None
    return {"http_allowed_hosts": config.getini("kafkalite_http_allowed_hosts"), "controls_token": token}


def _start_broker(config: pytest.Config):
    """The session's broker, started on first use (or, with a console, once tests are collected)."""
    broker = config.stash.get(_BROKER, None)
    if broker is not None:
        return broker
    import kafkalite

    level = config.getoption("kafkalite_log_level", None) or config.getini("kafkalite_log_level")
    nodes = config.getoption("kafkalite_nodes", None) or config.getini("kafkalite_nodes") or None
    tls = bool(config.getoption("kafkalite_tls_self_signed", False) or config.getini("kafkalite_tls_self_signed"))
    broker = kafkalite.start(config=_broker_config(config), log_level=level, console=_console(config),
                             listeners=config.getini("kafkalite_listeners"), tls_self_signed=tls,
                             nodes=int(nodes) if nodes else None,
                             controls=_controls(config),
                             schema_registry="127.0.0.1:0" if _registry_available() else None,
                             seed=_seed(config), **_http_settings(config), **_chaos_settings(config))
    config.stash[_BROKER] = broker
    if broker.console_url:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        capture = config.pluginmanager.get_plugin("capturemanager")
        if reporter is not None:
            # to the terminal, not into a test's captured output
            with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
                reporter.write_line(f"kafkalite console: {broker.console_url} (broker {broker.bootstrap})")
    return broker


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """With a console, start the broker before the first test, so that its address is printed at
    the start of the session (and the page can be opened before anything runs)."""
    config = session.config
    if _console(config) and not external_bootstrap(config) and any(_uses_broker(i) for i in session.items):
        _start_broker(config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    broker = session.config.stash.get(_BROKER, None)
    if broker is not None:  # started for the console, but no test asked for it
        session.config.stash[_BROKER] = None
        broker.close()


@pytest.fixture(scope="session")
def kafka_bootstrap(pytestconfig: pytest.Config, kafkalite_broker) -> str:
    """``host:port`` of the broker the tests talk to."""
    return external_bootstrap(pytestconfig) or kafkalite_broker.bootstrap


def _topic_base(request: pytest.FixtureRequest) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name).strip("-.")
    return base[:180] or "topic"


@pytest.fixture
def kafka_topic_factory(kafka_bootstrap: str, request: pytest.FixtureRequest):
    """``make(partitions=1, configs=None, name=None) -> name``: creates a topic for this test
    (deleted afterwards)."""
    from kafkalite.admin import AdminConnection

    created: list[str] = []
    conn: list[AdminConnection] = []

    def connection() -> AdminConnection:
        if not conn:
            conn.append(AdminConnection(kafka_bootstrap))
        return conn[0]

    def make(partitions: int = 1, configs: dict[str, Any] | None = None, name: str | None = None) -> str:
        topic = name or f"{_topic_base(request)}-{uuid.uuid4().hex[:8]}"
        c = connection()
        c.create_topic(topic, partitions, {k: str(v) for k, v in (configs or {}).items()})
        created.append(topic)
        c.wait_for_topic(topic, partitions)
        return topic

    yield make
    if conn:
        try:
            for topic in created:
                try:
                    conn[0].delete_topic(topic)
                except Exception:  # best effort: the broker may be gone or refuse
                    break
        finally:
            conn[0].close()


@pytest.fixture
def kafka_topic(kafka_topic_factory: Callable[..., str], request: pytest.FixtureRequest) -> str:
    """A fresh topic for this test; ``@pytest.mark.kafka_topic(partitions=N, configs={...})``."""
    marker = request.node.get_closest_marker("kafka_topic")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
    if marker and marker.args:
        kwargs.setdefault("partitions", marker.args[0])
    return kafka_topic_factory(**kwargs)


@pytest.fixture(scope="session")
def schema_registry_url(pytestconfig: pytest.Config, kafkalite_broker) -> str:
    """The schema registry's base URL, "http://HOST:PORT/"."""
    if kafkalite_broker is None:
        url = pytestconfig.getoption("schema_registry_url", None) or os.environ.get("SCHEMA_REGISTRY_URL")
        if not url:
            pytest.fail("schema_registry_url with an external broker needs --schema-registry-url or SCHEMA_REGISTRY_URL")
        return url
    if kafkalite_broker.schema_registry_url is None:
        pytest.fail("schema_registry_url needs the schema-registry extra (Starlette, hypercorn and the schema "
                    "libraries): pip install '.[schema-registry]' in a kafkalite checkout")
    return kafkalite_broker.schema_registry_url


@pytest.fixture
def kafkalite_controls(pytestconfig: pytest.Config, kafkalite_broker):
    """The session broker's test controls; faults this test armed are cleared afterwards."""
    if kafkalite_broker is None:
        pytest.fail("kafkalite_controls needs the kafkalite broker the session starts, not an external one "
                    f"({external_bootstrap(pytestconfig)})")
    if kafkalite_broker.controls_url is None:
        from kafkalite.broker.startup_checks import console_install_command

        pytest.fail(f"kafkalite_controls needs the console extra (Starlette, hypercorn, anyio): "
                    f"{console_install_command()}")
    controls = kafkalite_broker.controls
    yield controls
    controls.call("clear-faults")


# --- the broker's log on failing tests ----------------------------------------------------------

def _uses_broker(item: pytest.Item) -> bool:
    names = getattr(item, "fixturenames", ())
    return any(n in _FIXTURES for n in names)


def _test_broker(item: pytest.Item) -> Any:
    """The broker `item` talks to: its kafkalite_fresh one, else the session's when it uses it
    (None before it is started)."""
    fresh = item.stash.get(_FRESH, None)
    if fresh is not None:
        return fresh
    return item.config.stash.get(_BROKER, None) if _uses_broker(item) else None


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _report_mode(config: pytest.Config) -> str:
    mode = config.getoption("kafkalite_report", None) or config.getini("kafkalite_report") or "failed"
    if mode not in REPORT_MODES:
        raise pytest.UsageError(f"kafkalite_report: expected one of {', '.join(REPORT_MODES)}, got {mode!r}")
    return mode


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    broker = item.config.stash.get(_BROKER, None)
    # a broker started during this setup has offset 0: all of its log belongs to this test
    item.stash[_LOG_OFFSET] = _log_size(broker.log_path) if broker is not None else 0
    item.stash[_REPORT_SEQ] = 0
    if broker is not None and broker.controls_url and _report_mode(item.config) != "off" and _uses_broker(item):
        with contextlib.suppress(Exception):  # no mark, no report: the test itself must not fail for it
            item.stash[_REPORT_SEQ] = broker.controls.call("test-report")["seq"]


def _broker_report(item: pytest.Item, report: pytest.TestReport) -> None:
    """The section of what the broker saw during the test (--kafkalite-report)."""
    mode = _report_mode(item.config)
    if mode == "off" or (mode == "failed" and not report.failed) or (mode == "all" and report.when != "call"
                                                                      and not report.failed):
        return
    broker = _test_broker(item)
    if broker is None or not broker.controls_url:
        return
    after = 0 if item.stash.get(_FRESH, None) is not None else item.stash.get(_REPORT_SEQ, 0)
    from kafkalite.report import render

    try:
        text = render(broker.controls.call("test-report", after_seq=after))
    except Exception as exc:  # noqa: BLE001 - a broker that died or a failing control: say so in the report
        text = f"(no report from the broker: {type(exc).__name__}: {exc})\n"
    report.sections.append((f"kafkalite: what the broker saw ({report.when})", text[-_MAX_SECTION:]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    _broker_report(item, report)
    fresh = item.stash.get(_FRESH, None)
    if report.failed and fresh is not None:  # kafkalite_fresh: the whole log of the test's broker
        report.sections.append((f"Captured kafkalite_fresh broker log {report.when}",
                                fresh.log_text()[-_MAX_SECTION:] or "(the broker logged nothing)\n"))
    if not report.failed or not _uses_broker(item):
        return
    broker = item.config.stash.get(_BROKER, None)
    if broker is None:
        return
    start = item.stash.get(_LOG_OFFSET, 0)
    try:
        with open(broker.log_path, "rb") as f:
            f.seek(start)
            data = f.read()
    except OSError:
        return
    note = ""
    if len(data) > _MAX_SECTION:
        data = data[-_MAX_SECTION:]
        data = data[data.find(b"\n") + 1:]
        note = f"(last {_MAX_SECTION // 1024} KiB)\n"
    if not data.strip():
        data = b"(the broker logged nothing during this test)\n"
    if broker.console_url:
        report.sections.append(("kafkalite console", f"{broker.console_url} (transactions: "
                                f"{broker.console_url}#/transactions, groups: {broker.console_url}#/groups)"))
    alive = "" if broker.process.poll() is None else f"(the broker has exited with code {broker.process.returncode})\n"
    report.sections.append(
        (f"Captured kafkalite broker log {report.when}",
         f"{alive}{note}{data.decode('utf-8', 'replace')}"))


# --- isolation: a reset session broker, or a broker of the test's own ------------------------------

_FORK_SERVER = pytest.StashKey[Any]()
_FRESH = pytest.StashKey[Any]()  # the kafkalite_fresh broker of a test, for its failure report


def _seed(config: pytest.Config) -> str | None:
    """ini kafkalite_seed, relative to the ini file's directory."""
    value = config.getini("kafkalite_seed")
    if not value:
        return None
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    return str((base / value).resolve())


@pytest.fixture
def kafka_clean(pytestconfig: pytest.Config, kafkalite_broker) -> str:
    """The session broker, reset before this test (no topic, group, offset, transactional id,
    ACL or fault of an earlier test; the session's seed put back); its bootstrap string."""
    if kafkalite_broker is None:
        pytest.fail("kafka_clean resets the kafkalite broker the session starts; it cannot reset an external "
                    f"one ({external_bootstrap(pytestconfig)})")
    if kafkalite_broker.controls_url is None:
        pytest.fail("kafka_clean needs the broker's controls: pip install '.[console]' in a kafkalite checkout")
    kafkalite_broker.controls.call("reset")
    return kafkalite_broker.bootstrap


def _fork_server(config: pytest.Config):
    server = config.stash.get(_FORK_SERVER, None)
    if server is None:
        from kafkalite.forkserver import ForkServer

        server = config.stash[_FORK_SERVER] = ForkServer()
    return server


@pytest.fixture
def kafkalite_fresh(pytestconfig: pytest.Config, request: pytest.FixtureRequest):
    """A broker of this test's own (kafkalite.Broker), with the session's settings and seed,
    forked by a server started once per session; killed and removed after the test."""
    level = pytestconfig.getoption("kafkalite_log_level", None) or pytestconfig.getini("kafkalite_log_level")
    broker = _fork_server(pytestconfig).start(
        config=_broker_config(pytestconfig), log_level=level, seed=_seed(pytestconfig),
        listeners=pytestconfig.getini("kafkalite_listeners"),
        controls="127.0.0.1:0" if _http_available() else None, **_http_settings(pytestconfig),
        **_chaos_settings(pytestconfig))
    request.node.stash[_FRESH] = broker
    try:
        yield broker
    finally:
        broker.close()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    server = config.stash.get(_FORK_SERVER, None)
    if server is not None:
        config.stash[_FORK_SERVER] = None
        server.close()
