"""The test helpers of other languages, run by their own test runners against this checkout's
broker, and their controls clients checked against the control table.

- go/kafkalitetest: `go test` (its tests use franz-go and sarama), modules from the Go module
  proxy into .cache/go/mod as compat_tests/go's are (compat_tests.clients.golang.go_env).
- node/kafkalite: `npm pack`, installed into an empty project with `npm install TARBALL` as a user
  does, and its tests run there with node's own test runner (kafkajs from compat_tests/node).
- The generated clients (kafkalite.controls_codegen) equal what the control table makes now.

The helpers find the broker through KAFKALITE_CMD, here this checkout's `python -P -m kafkalite`.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalite import controls_codegen

REPO = Path(__file__).resolve().parents[2]
GO_DIR = REPO / "go" / "kafkalitetest"
NODE_DIR = REPO / "node" / "kafkalite"
CONTROLS_TOKEN = "helpers-" + os.urandom(6).hex()
# the JVMs of the JUnit 5 extension's test (surefire's fork, javac, the sample's launcher) live
# seconds: C2 compiling their classes cost more than it gained (about 24 core-s for the test, 17 so)
SHORT_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto")
# what a Go test gets of _broker_env() beside go_env()
BROKER_ENV_KEYS = ("KAFKALITE_CMD", "PYTHONPATH", "KAFKALITE_CONTROLS_TOKEN")
M2_REPO = Path(os.environ.get("KAFKALITE_M2_REPO") or REPO / ".cache" / "m2")


def _broker_env() -> dict[str, str]:
    env = dict(os.environ)
    env["KAFKALITE_CMD"] = f"{sys.executable} -P -m kafkalite"
    # every broker the helpers start demands this token for its controls, and every helper's
    # controls client sends it (a control without it would be answered 401)
    env["KAFKALITE_CONTROLS_TOKEN"] = CONTROLS_TOKEN
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_generated_clients_match_the_control_table():
    # in an interpreter of its own: a test module run before this one in the same worker may have
    # registered a control of its own (fault_tests' failing handlers) in the process's table
    check = subprocess.run([sys.executable, "-P", "-m", "kafkalite.controls_codegen", "--check"],
                           capture_output=True, text=True, timeout=120, env=_broker_env())
    assert check.returncode == 0, check.stderr


def test_a_changed_table_makes_every_client_differ():
    table = copy.deepcopy(controls_codegen.table())
    reset = next(c for c in table if c["name"] == "reset")
    reset["parameters"]["keep_topics"] = {"required": False, "default": False, "type": "boolean"}
    assert sorted(controls_codegen.differing(tbl=table)) == sorted(controls_codegen.sources(table))
    assert "KeepTopics *bool" in controls_codegen.go_source(table)
    assert "keep_topics?: boolean | null;" in controls_codegen.dts_source(table)


@pytest.mark.franz
@pytest.mark.sarama
@pytest.mark.timeout(900)
def test_go_helper_with_franz_go_and_sarama():
    from compat_tests.clients.golang import go_env

    if shutil.which("go") is None:
        pytest.fail("go is not installed (scripts/install-test-deps.sh installs it)")
    env = {**go_env(), **{k: v for k, v in _broker_env().items() if k in BROKER_ENV_KEYS}}
    vet = _run(["go", "vet", "./..."], GO_DIR, env, 600)
    assert vet.returncode == 0, vet.stderr
    unformatted = _run(["gofmt", "-l", "."], GO_DIR, env, 60)
    assert unformatted.stdout == "", f"gofmt would change: {unformatted.stdout}"
    result = _run(["go", "test", "-count=1", "-p", "1", "-v", "./..."], GO_DIR, env, 800)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    passed = [line for line in result.stdout.splitlines() if line.startswith("--- PASS: Test")]
    assert len(passed) >= 5, result.stdout


def _npm(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "npm_config_cache": str(REPO / ".cache" / "npm"), "npm_config_update_notifier": "false",
           "npm_config_fund": "false", "npm_config_audit": "false"}
    return _run(["npm", *args], cwd, env, timeout)


@pytest.mark.kafkajs
@pytest.mark.timeout(600)
def test_node_helper_packed_installed_and_tested_with_kafkajs(tmp_path):
    from compat_tests.clients.kafkajs import node_modules_dir

    kafkajs = node_modules_dir()
    assert kafkajs is not None, "kafkajs is not installed (scripts/install-test-deps.sh)"
    packed = _npm(["pack", "--pack-destination", str(tmp_path), "--json"], NODE_DIR)
    assert packed.returncode == 0, packed.stderr
    [tarball] = [tmp_path / entry["filename"] for entry in json.loads(packed.stdout)]
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "sample", "private": True}))
    installed = _npm(["install", "--offline", "--no-save", str(tarball)], project)
    assert installed.returncode == 0, installed.stderr
    # the package's own tests, run as a user's tests would: requiring "kafkalite" from the project
    shutil.copytree(NODE_DIR / "test", project / "test")
    env = {**_broker_env(), "NODE_PATH": str(kafkajs)}
    tests = sorted(str(p.relative_to(project)) for p in (project / "test").glob("*.test.js"))
    result = _run(["node", "--test", "--test-concurrency=1", *tests], project, env, 500)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "# fail 0" in result.stdout and "# pass 0" not in result.stdout, result.stdout[-2000:]


def _doc_block(doc: Path, section: str, language: str) -> str:
    """The first ```language block after the heading `section` of a doc."""
    text = doc.read_text()
    start = text.index(f"\n{section}\n")
    fence = f"```{language}\n"
    begin = text.index(fence, start) + len(fence)
    return text[begin:text.index("```", begin)]


@pytest.mark.franz
@pytest.mark.timeout(900)
def test_docs_go_sample_passes_as_printed(tmp_path):
    """docs/go.md followed from the top: its go.mod lines on a new module, its sample test."""
    from compat_tests.clients.golang import go_env

    env = {**go_env(), "GOFLAGS": "-modcacherw",
           **{k: v for k, v in _broker_env().items() if k in BROKER_ENV_KEYS}}
    doc = REPO / "docs" / "go.md"
    module = tmp_path / "orders"
    module.mkdir()
    (module / "orders_test.go").write_text(_doc_block(doc, "## 3. A test", "go"))
    steps = [["go", "mod", "init", "example.com/orders"],
             ["go", "get", "github.com/twmb/franz-go@v1.22.2"]]  # the client the project already uses
    for line in _doc_block(doc, "## 2. The module", "sh").strip().splitlines():
        steps.append(line.replace("/path/to/kafkalite", str(REPO)).split())
    steps.append(["go", "test", "-count=1", "-v", "./..."])
    for step in steps:
        done = _run(step, module, env, 600)
        assert done.returncode == 0, f"{' '.join(step)}:\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
    assert done.stdout.count("--- PASS") == 2, done.stdout


@pytest.mark.kafkajs
@pytest.mark.timeout(600)
def test_docs_node_sample_passes_as_printed(tmp_path):
    """docs/node.md followed from the top: npm pack, npm install of the tarball, its sample test."""
    from compat_tests.clients.kafkajs import node_modules_dir

    kafkajs = node_modules_dir()
    assert kafkajs is not None, "kafkajs is not installed (scripts/install-test-deps.sh)"
    doc = REPO / "docs" / "node.md"
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "sample", "private": True}))
    for line in _doc_block(doc, "## 2. The package", "sh").strip().splitlines():
        line = line.replace("/path/to/kafkalite", str(REPO)).replace("/tmp", str(tmp_path))
        done = subprocess.run(["bash", "-c", line], cwd=project, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "npm_config_cache": str(REPO / ".cache" / "npm"),
                                   "npm_config_offline": "true"})
        assert done.returncode == 0, f"{line}:\n{done.stderr[-3000:]}"
    (project / "orders.test.js").write_text(_doc_block(doc, "## 3. A test", "js"))
    result = _run(["node", "--test", "orders.test.js"], project, {**_broker_env(), "NODE_PATH": str(kafkajs)}, 300)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "# pass 2" in result.stdout and "# fail 0" in result.stdout, result.stdout[-2000:]


@pytest.fixture(scope="module")
def junit5_install() -> subprocess.CompletedProcess:
    """`mvn install` of java/kafkalite-junit5 (as docs/java.md says), which runs its own tests and
    puts the extension in the project's Maven repository, once for the tests of this file that
    use it (one xdist worker runs a file's tests, so two builds never share its target folder)."""
    if shutil.which("mvn") is None:
        pytest.fail("mvn is not installed (scripts/install-test-deps.sh installs it)")
    return _run(["mvn", "-B", f"-Dmaven.repo.local={M2_REPO}", f"-Dkafkalite.cmd={sys.executable} -P -m kafkalite",
                 f"-DargLine={' '.join(SHORT_JVM)}", "install"], REPO / "java" / "kafkalite-junit5", _broker_env(), 850)


@pytest.mark.java
@pytest.mark.timeout(900)
def test_java_junit5_extension_with_kafka_clients(tmp_path, junit5_install):
    """`mvn install` of java/kafkalite-junit5 (as docs/java.md says), which runs its own tests:
    a broker per class reset before each test, snapshots, a fault seen by kafka-clients, the
    generated controls against the broker's table, and a broker per test on a manual clock; then
    docs/java.md's sample test, as printed, against the installed extension."""
    result = junit5_install
    assert result.returncode == 0, result.stdout[-8000:]
    assert "Tests run: 7, Failures: 0, Errors: 0, Skipped: 0" in result.stdout, result.stdout[-4000:]
    extension = M2_REPO / "dev" / "kafkalite" / "kafkalite-junit5" / "0.1.0" / "kafkalite-junit5-0.1.0.jar"
    assert extension.is_file()
    # docs/java.md's sample as printed, against the extension just installed, kafka-clients and
    # JUnit's console launcher (the java-example jar set of docs/java.md's first part)
    jars = Path(os.environ.get("KAFKALITE_DEPS_DIR") or REPO / ".deps") / "maven" / "java-example"
    sample = tmp_path / "OrdersTest.java"
    sample.write_text(_doc_block(REPO / "docs" / "java.md", "## The JUnit 5 extension", "java"))
    classpath = os.pathsep.join([str(jars / "*"), str(extension)])
    compiled = _run(["javac", *(f"-J{flag}" for flag in SHORT_JVM), "-d", str(tmp_path / "classes"), "-cp", classpath,
                     str(sample)], tmp_path, _broker_env(), 300)
    assert compiled.returncode == 0, compiled.stdout[-4000:] + compiled.stderr[-4000:]
    ran = _run(["java", *SHORT_JVM, "-cp", os.pathsep.join([classpath, str(tmp_path / "classes")]),
                "org.junit.platform.console.ConsoleLauncher", "execute", "--disable-banner",
                "--select-class", "OrdersTest"], tmp_path, _broker_env(), 300)
    assert ran.returncode == 0, ran.stdout[-6000:] + ran.stderr[-3000:]
    assert "2 tests successful" in ran.stdout and "0 tests failed" in ran.stdout, ran.stdout[-3000:]


@pytest.mark.java
@pytest.mark.spring
@pytest.mark.timeout(900)
def test_spring_kafka_delivery_pipelines_under_chaos(junit5_install):
    """examples/delivery/java's JUnit 5 tests (`mvn test`, offline from the project's Maven
    repository), with the extension just installed: the Spring Kafka billing pipeline three ways
    on a @Kafkalite broker under seeded chaos, judged by the delivery audit: at most once loses an
    order, at least once duplicates an invoice (each within a few seeds), the @Transactional
    listener is exactly once under three seeds."""
    assert junit5_install.returncode == 0, junit5_install.stdout[-8000:]
    result = _run(["mvn", "-B", "-o", f"-Dmaven.repo.local={M2_REPO}", f"-Dkafkalite.cmd={sys.executable} -P -m kafkalite",
                   f"-DargLine={' '.join(SHORT_JVM)}", "test"], REPO / "examples" / "delivery" / "java", _broker_env(), 600)
    assert result.returncode == 0, result.stdout[-8000:]
    assert "Tests run: 5, Failures: 0, Errors: 0, Skipped: 0" in result.stdout, result.stdout[-4000:]
    # each run's line (pipeline, seed, audit, faults), and the Produce faults behind a loss or a duplicate
    printed = [line for line in result.stdout.splitlines() if line.startswith(("billing ", "  refused", "  dropped"))]
    audits = [line for line in printed if line.startswith("billing ")]
    verdicts = {line.split(" seed ")[0]: line.split(": ")[1].split(",")[0] for line in audits}
    assert verdicts == {"billing at-most-once": "at most once", "billing at-least-once": "at least once",
                        "billing exactly-once": "exactly once"}, audits
    print("\n".join(printed))
