"""What a test pays in Go and Node for a clean broker: reset of a shared broker against a fresh
broker of its own, through the language's helper (go/kafkalitetest, node/kafkalite), as the
language's own test runner times each test.

Each language gets a throwaway project (Go: a module with `replace` to go/kafkalitetest, built
once with `go test -c`; Node: node/kafkalite packed and installed) holding 2 x TESTS tests that
produce one record with the language's client (franz-go, kafkajs): TESTS start with the shared
broker's reset (Go's `broker.Reset(t)`, Node's `beforeEach(broker.reset)`), TESTS start a broker
of their own (`kafkalitetest.Start(t)`, `startKafkalite()`). A no-op test of the same runner is
the floor. The figure per kind is the median test time (go test -v's `--- PASS: T (0.15s)`,
node --test's `duration_ms`); for Go also the time to the first test: the test binary's start
(its build excluded) to the end of its first test, the shared broker's start included. The broker is this checkout's
`python -P -m kafkalite` (KAFKALITE_CMD).

    python -m bench.helper_costs [--tests 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.stats import Report, emit

REPO = Path(__file__).resolve().parent.parent

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


def run(tests: int) -> Report:
    report = Report("helper costs: a clean broker per test in Go and Node",
                    settings={"tests_per_kind": tests, "broker": "python -P -m kafkalite"})
    metric = report.metric("helper_costs", "test time over a no-op test", "ms", higher_is_better=False)
    first = report.metric("helper_costs", "test binary start to the end of the first test", "ms",
                          higher_is_better=False)
    with tempfile.TemporaryDirectory(prefix="bench-helper-costs-") as tmp:
        work = Path(tmp)
        for language, measure in (("go", go_costs), ("node", node_costs)):
            try:
                times = measure(work, tests)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                metric.fail(language, str(exc)[-600:])
                continue
            floor = sorted(times["noop"])[len(times["noop"]) // 2] if times["noop"] else 0.0
            for kind in ("reset", "fresh"):
                for value in times[kind]:
                    metric.add(f"{language}: {kind}", value - floor)
            for value in times.get("first", []):
                first.add(f"{language}", value)
    report.notes.append("reset: the shared broker's reset, then one record produced; fresh: a broker of the "
                        "test's own started, one record produced, the broker stopped")
    return report


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=10, help="tests of each kind (default 10)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)
    report = run(args.tests)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
