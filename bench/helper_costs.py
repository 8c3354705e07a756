"""What a test pays in Go, Node and Java for a clean broker: reset of a shared broker against a
fresh broker of its own, through the language's helper (go/kafkalitetest, node/kafkalite, the JUnit
5 extension), as the language's own test runner times each test; for Java the same beside Spring's
EmbeddedKafka, in the same run.

Each language gets a throwaway project (Go: a module with `replace` to go/kafkalitetest, built
once with `go test -c`; Node: node/kafkalite packed and installed) holding 2 x TESTS tests that
produce one record with the language's client (franz-go, kafkajs): TESTS start with the shared
broker's reset (Go's `broker.Reset(t)`, Node's `beforeEach(broker.reset)`), TESTS start a broker
of their own (`kafkalitetest.Start(t)`, `startKafkalite()`). A no-op test of the same runner is
the floor. The figure per kind is the median test time (go test -v's `--- PASS: T (0.15s)`,
node --test's `duration_ms`); for Go also the time to the first test: the test binary's start
(its build excluded) to the end of its first test, the shared broker's start included. The broker is this checkout's
`python -P -m kafkalite` (KAFKALITE_CMD).

Java (bench/junit_costs/): JUnit's console launcher runs, each class in a JVM of its own, a
class of TESTS tests on one broker and a class of TESTS tests with a broker each, for kafkalite's
extension (`@Kafkalite`, reset before each test by the extension; `@Kafkalite(perTest = true)`)
and for spring-kafka-test's EmbeddedKafka (`@EmbeddedKafka`, a KRaft broker in the test JVM; it
has no reset, so each test deletes the topics and groups through the Admin client first; a fresh
`EmbeddedKafkaKraftBroker` started and destroyed in the test). Each test produces one record
with a producer of its own. The figures: each test's time from the launcher's XML report over a
no-op test's, the time from the JVM's launch to the end of the first test of the one-broker class
(the broker's start included), and the peak RSS of that JVM with every process it started (the
kafkalite broker; EmbeddedKafka is inside the JVM), each over --runs runs with the two brokers
alternating. The JVMs run with java's defaults, as Maven's Surefire runs them. EmbeddedKafka's
jars (scripts/maven/embedded-kafka/pom.xml) are resolved from Maven Central into
.deps/maven/embedded-kafka (Maven's repository .cache/m2) on the first run.

    python -m bench.helper_costs [--tests 10] [--runs 3] [--languages go,node,java] [--json FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil

from bench.stats import Report, emit

REPO = Path(__file__).resolve().parent.parent
JUNIT_COSTS = REPO / "bench" / "junit_costs"
EXTENSION_SOURCES = REPO / "java" / "kafkalite-junit5" / "src" / "main" / "java" / "dev" / "kafkalite" / "junit5"
DEPS = Path(os.environ.get("KAFKALITE_DEPS_DIR") or REPO / ".deps") / "maven"
M2_REPO = Path(os.environ.get("KAFKALITE_M2_REPO") or REPO / ".cache" / "m2")
FIRST_TEST_DONE = "junit-costs: first test done"  # Costs.FIRST_TEST_DONE

GO_TEST = """package costs_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"kafkalite/kafkalitetest"
)

var shared *kafkalitetest.Broker

func TestMain(m *testing.M) {
	var err error
	if shared, err = kafkalitetest.Launch(); err != nil {
		panic(err)
	}
	code := m.Run()
	shared.Close()
	os.Exit(code)
}

func produceOne(t *testing.T, bootstrap string) {
	client, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func TestNoop(t *testing.T) {}

func TestReset(t *testing.T) {
	for i := 0; i < TESTS; i++ {
		t.Run("", func(t *testing.T) { shared.Reset(t); produceOne(t, shared.Bootstrap) })
	}
}

func TestFresh(t *testing.T) {
	for i := 0; i < TESTS; i++ {
		t.Run("", func(t *testing.T) { produceOne(t, kafkalitetest.Start(t).Bootstrap) })
	}
}
"""

NODE_TEST = """const { test, describe, before, after, beforeEach } = require("node:test");
const { Kafka, logLevel } = require("kafkajs");
const { startKafkalite } = require("kafkalite");

async function produceOne(bootstrap) {
  const producer = new Kafka({ brokers: [bootstrap], logLevel: logLevel.NOTHING }).producer();
  await producer.connect();
  await producer.send({ topic: "t", messages: [{ value: "v" }] });
  await producer.disconnect();
}

test("noop", () => {});

describe("reset", () => {
  let shared;
  before(async () => { shared = await startKafkalite(); });
  after(() => shared.stop());
  beforeEach(() => shared.reset());
  for (let i = 0; i < TESTS; i++) test(`reset ${i}`, () => produceOne(shared.bootstrap));
});

describe("fresh", () => {
  for (let i = 0; i < TESTS; i++) {
    test(`fresh ${i}`, async () => {
      const own = await startKafkalite();
      try { await produceOne(own.bootstrap); } finally { await own.stop(); }
    });
  }
});
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["KAFKALITE_CMD"] = f"{sys.executable} -P -m kafkalite"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def go_costs(work: Path, tests: int) -> dict[str, list[float]]:
    from compat_tests.clients.golang import go_env

    env = {**go_env(), "GOFLAGS": "-modcacherw", **{k: v for k, v in _env().items()
                                                    if k in ("KAFKALITE_CMD", "PYTHONPATH")}}
    module = work / "go"
    module.mkdir()
    (module / "costs_test.go").write_text(GO_TEST.replace("TESTS", str(tests)))
    for step in (["go", "mod", "init", "example.com/costs"], ["go", "get", "github.com/twmb/franz-go@v1.22.2"],
                 ["go", "mod", "edit", "-require=kafkalite/kafkalitetest@v0.0.0",
                  f"-replace=kafkalite/kafkalitetest={REPO / 'go' / 'kafkalitetest'}"],
                 ["go", "mod", "tidy"], ["go", "test", "-c", "-o", "costs.test"]):
        _run(step, module, env)
    t0 = time.monotonic()
    proc = subprocess.Popen([str(module / "costs.test"), "-test.v", "-test.count=1"], cwd=module, env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first: float | None = None
    times: dict[str, list[float]] = {"noop": [], "reset": [], "fresh": []}
    for line in proc.stdout:
        m = re.match(r"\s*--- PASS: Test(\w+)(/\S+)? \(([\d.]+)s\)", line)
        if not m:
            continue
        if first is None:
            first = time.monotonic() - t0
        kind = m.group(1).lower()
        if kind == "noop" or m.group(2):  # a subtest of TestReset / TestFresh, or the no-op
            times[kind].append(float(m.group(3)) * 1000.0)
    if proc.wait(600) != 0:
        raise RuntimeError("the Go cost tests failed")
    times["first"] = [first * 1000.0] if first is not None else []
    return times


def node_costs(work: Path, tests: int) -> dict[str, list[float]]:
    from compat_tests.clients.kafkajs import node_modules_dir

    kafkajs = node_modules_dir()
    if kafkajs is None:
        raise RuntimeError("kafkajs is not installed (scripts/install-test-deps.sh)")
    project = work / "node"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "costs", "private": True}))
    npm_env = {**os.environ, "npm_config_cache": str(REPO / ".cache" / "npm")}
    packed = json.loads(_run(["npm", "pack", "--json", "--pack-destination", str(work)], REPO / "node" / "kafkalite",
                             npm_env))
    _run(["npm", "install", "--offline", "--no-save", str(work / packed[0]["filename"])], project, npm_env)
    (project / "costs.test.js").write_text(NODE_TEST.replace("TESTS", str(tests)))
    out = _run(["node", "--test", "--test-reporter=tap", "costs.test.js"], project,
               {**_env(), "NODE_PATH": str(kafkajs)})
    times: dict[str, list[float]] = {"noop": [], "reset": [], "fresh": []}
    name = None
    for line in out.splitlines():
        m = re.match(r"\s*ok \d+ - (noop|reset \d+|fresh \d+)$", line)
        if m:
            name = m.group(1).split()[0]
            continue
        d = re.match(r"\s*duration_ms: ([\d.]+)", line)
        if d and name:
            times[name].append(float(d.group(1)))
            name = None
    return times


def embedded_kafka_jars() -> list[Path]:
    """spring-kafka-test's jar set with JUnit's console launcher, resolved from Maven Central once
    per pom (a stamp of its hash), as scripts/install-test-deps.sh resolves the suite's sets."""
    pom = REPO / "scripts" / "maven" / "embedded-kafka" / "pom.xml"
    out = DEPS / "embedded-kafka"
    stamp = out / ".pom.sha256"
    sha = hashlib.sha256(pom.read_bytes()).hexdigest()
    if not stamp.is_file() or stamp.read_text().strip() != sha:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        _run(["mvn", "-q", "-B", "-f", str(pom), f"-Dmaven.repo.local={M2_REPO}", "dependency:copy-dependencies",
              f"-DoutputDirectory={out}", "-DincludeScope=runtime"], REPO, dict(os.environ), timeout=900)
        stamp.write_text(sha + "\n")
    return sorted(out.glob("*.jar"))


def _javac(classes: Path, jars: list[Path], sources: list[Path]) -> str:
    """Compiles `sources` into `classes`; the classpath to run them with. testcontainers is on the
    compiler's classpath only (the extension's KafkaliteContainer): the tests run without it."""
    classpath = os.pathsep.join(map(str, jars))
    testcontainers = sorted((DEPS / "testcontainers-java").glob("*.jar"))
    _run(["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp",
          os.pathsep.join([classpath, *map(str, testcontainers)]), *map(str, sources)], REPO, dict(os.environ),
         timeout=300)
    return os.pathsep.join([classpath, str(classes)])


def _tree_rss(pid: int) -> int:
    """The resident memory of `pid` and every process it started, in bytes (0 once it ended)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def _junit(classpath: str, classes: list[str], work: Path, env: dict[str, str],
           timeout: float = 900) -> tuple[dict[str, list[float]], float | None, int]:
    """One JVM of JUnit's console launcher running `classes`: each test's time (ms) by class (the
    launcher's XML report), the time (ms) from the JVM's launch to the first test's end (its
    FIRST_TEST_DONE line), and the peak RSS (bytes) of the JVM with the processes it started."""
    run_dir = Path(tempfile.mkdtemp(prefix="junit-", dir=work))
    (run_dir / "tmp").mkdir()
    cmd = ["java", f"-Djava.io.tmpdir={run_dir / 'tmp'}", "-cp", classpath,
           "org.junit.platform.console.ConsoleLauncher", "execute", "--disable-banner", "--details=none",
           f"--reports-dir={run_dir / 'reports'}", *(f"--select-class={c}" for c in classes)]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=run_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.05):  # a sampling period: RSS is read 20 times a second until the JVM ends
            peak = max(peak, _tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    first: float | None = None
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if first is None and line.strip() == FIRST_TEST_DONE:
            first = (time.monotonic() - t0) * 1000.0
        tail = [*tail[-60:], line]
    code = proc.wait()
    killer.cancel()
    done.set()
    sampler.join()
    if code != 0:
        raise RuntimeError(f"JUnit ({', '.join(classes)}) failed:\n{''.join(tail)[-3000:]}")
    times: dict[str, list[float]] = {}
    for report in (run_dir / "reports").glob("TEST-*.xml"):
        for case in ET.parse(report).getroot().iter("testcase"):
            times.setdefault(case.get("classname", ""), []).append(float(case.get("time", "0")) * 1000.0)
    return times, first, peak


JAVA_BROKERS = {"kafkalite": ("KafkaliteResetCosts", "KafkaliteFreshCosts"),
                "EmbeddedKafka": ("EmbeddedResetCosts", "EmbeddedFreshCosts")}


def java_costs(work: Path, tests: int, runs: int) -> dict[str, dict[str, list[float]]]:
    """For each of JAVA_BROKERS: reset and fresh test times over the no-op floor (ms), the time to
    the first test (ms) and the peak RSS (MiB) of the one-broker class's JVM, over `runs` runs."""
    launcher = sorted((DEPS / "java-example").glob("junit-platform-console-standalone-*.jar"))
    if not launcher:
        raise RuntimeError(f"no JUnit console launcher in {DEPS / 'java-example'} (scripts/install-test-deps.sh)")
    sources = work / "junit_costs"
    sources.mkdir()
    for src in JUNIT_COSTS.rglob("*.java"):
        target = sources / src.relative_to(JUNIT_COSTS)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(src.read_text().replace("static final int TESTS = 10;", f"static final int TESTS = {tests};"))
    common = sorted(sources.glob("*.java"))
    classpaths = {
        # kafka-clients 4.4.0 and JUnit 5's launcher (docs/java.md's jars), the extension from its sources
        "kafkalite": _javac(work / "classes-kafkalite", sorted((DEPS / "java-example").glob("*.jar")),
                            [*common, *sorted((sources / "kafkalite").glob("*.java")),
                             *sorted(EXTENSION_SOURCES.glob("*.java"))]),
        "EmbeddedKafka": _javac(work / "classes-embedded", embedded_kafka_jars(),
                                [*common, *sorted((sources / "embedded").glob("*.java"))]),
    }
    env = _env()
    out: dict[str, dict[str, list[float]]] = {b: {"reset": [], "fresh": [], "first": [], "rss": [], "noop": []}
                                              for b in JAVA_BROKERS}
    for i in range(runs):
        order = list(JAVA_BROKERS) if i % 2 == 0 else list(reversed(JAVA_BROKERS))
        for broker in order:
            shared, fresh = JAVA_BROKERS[broker]
            times, first, peak = _junit(classpaths[broker], [shared], work, env)
            out[broker]["reset"].extend(times.get(shared, []))
            out[broker]["first"].extend([first] if first is not None else [])
            out[broker]["rss"].append(peak / 2**20)
            times, _, _ = _junit(classpaths[broker], [fresh, "NoopCosts"], work, env)
            out[broker]["fresh"].extend(times.get(fresh, []))
            out[broker]["noop"].extend(times.get("NoopCosts", []))
    return out


LANGUAGES = ("go", "node", "java")


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2] if values else 0.0


def run(tests: int, runs: int = 3, languages: tuple[str, ...] = LANGUAGES) -> Report:
    report = Report("helper costs: a clean broker per test in Go, Node and Java (and Spring's EmbeddedKafka)",
                    settings={"tests_per_kind": tests, "java_runs": runs, "broker": "python -P -m kafkalite"})
    metric = report.metric("helper_costs", "test time over a no-op test", "ms", higher_is_better=False)
    first = report.metric("helper_costs", "test binary start to the end of the first test", "ms",
                          higher_is_better=False)
    memory = report.metric("helper_costs", "peak RSS of the one-broker run (test process and broker)", "MiB",
                           higher_is_better=False)
    with tempfile.TemporaryDirectory(prefix="bench-helper-costs-") as tmp:
        work = Path(tmp)
        for language, measure in (("go", go_costs), ("node", node_costs)):
            if language not in languages:
                continue
            try:
                times = measure(work, tests)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                metric.fail(language, str(exc)[-600:])
                continue
            floor = _median(times["noop"])
            for kind in ("reset", "fresh"):
                for value in times[kind]:
                    metric.add(f"{language}: {kind}", value - floor)
            for value in times.get("first", []):
                first.add(f"{language}", value)
        if "java" in languages:
            try:
                java = java_costs(work, tests, runs)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                metric.fail("java", str(exc)[-600:])
            else:
                for broker, figures in java.items():
                    floor = _median(figures["noop"])
                    for kind in ("reset", "fresh"):
                        for value in figures[kind]:
                            metric.add(f"java {broker}: {kind}", value - floor)
                    for value in figures["first"]:
                        first.add(f"java {broker}", value)
                    for value in figures["rss"]:
                        memory.add(f"java {broker}", value)
    report.notes.append("reset: the shared broker's reset, then one record produced; fresh: a broker of the "
                        "test's own started, one record produced, the broker stopped")
    if "java" in languages:
        report.notes.append("java EmbeddedKafka: reset is the Admin client deleting the topics and groups (it has "
                            "no reset); the JVMs run with java's defaults; first test and RSS: the one-broker "
                            "class alone in its JVM")
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=10, help="tests of each kind (default 10)")
    parser.add_argument("--runs", type=int, default=3, help="Java: runs of each class, brokers alternating (default 3)")
    parser.add_argument("--languages", default=",".join(LANGUAGES),
                        help=f"a comma-separated subset of {','.join(LANGUAGES)} (default all)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)
    languages = tuple(name.strip() for name in args.languages.split(",") if name.strip())
    unknown = sorted(set(languages) - set(LANGUAGES))
    if unknown:
        parser.error(f"unknown languages: {', '.join(unknown)}")
    report = run(args.tests, args.runs, languages)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
