"""`kafkalite bundle OUT`: the one file that runs the broker with nothing installed.

The bundle is built from this checkout and the test venv's libraries, then run by the system's
own python3 (/usr/bin/python3, the Debian one, which has none of them) with -I -S from an empty
folder and an environment holding only PATH, HOME and SHIV_ROOT (the folder the bundle unpacks
into on its first run). It must start, serve a real client on PLAINTEXT and on a TLS listener
with the self-signed CA, answer the controls, the console and the schema registry; and the Go
helper, given only the bundle, runs a franz-go test on it.

Bundles for other targets are built here the way a user builds them (`--platform`,
`--python-version`) and run on Debian's own interpreter of that target, unpacked by
scripts/debian_python.py: arm64 bookworm's 3.11 under qemu-aarch64, amd64 trixie's 3.13 through
its own loader. A macOS bundle cannot run here; its test checks what it holds."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import urllib.request
import uuid
import zipfile
from pathlib import Path

import pytest

from kafkalite.controls import Controls
from kafkalite.launcher import parse_ready_line, terminate

pytestmark = [pytest.mark.timeout(300), pytest.mark.librdkafka]

SYSTEM_PYTHON = "/usr/bin/python3"
DEPS = Path(os.environ.get("KAFKALITE_DEPS_DIR", Path(__file__).resolve().parents[2] / ".deps"))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "kafkalite.pyz"
    built = subprocess.run([sys.executable, "-m", "kafkalite", "bundle", str(out)],
                           capture_output=True, text=True, timeout=240)
    assert built.returncode == 0, built.stderr
    assert "bundled: " in built.stdout and "kio " in built.stdout and "starlette " in built.stdout, built.stdout
    return out


def _isolated_env(home: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "SHIV_ROOT": str(home / "shiv")}


def _start(bundle: Path, cwd: Path, args: list[str], python: list[str] | None = None
           ) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen([*(python or [SYSTEM_PYTHON]), "-I", "-S", str(bundle), *args], cwd=cwd,
                            env=_isolated_env(cwd),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the ready line, or EOF when the broker exits
    if not line.startswith("kafkalite ready"):
        terminate(proc)
        assert proc.stderr is not None
        pytest.fail(f"the bundle did not start: {line!r}\n{proc.stderr.read()[-3000:]}")
    return proc, parse_ready_line(line.strip())


def test_the_system_python_has_none_of_the_libraries(tmp_path):
    # what makes the rest of this file mean something: the bundle brings them all
    probe = subprocess.run([SYSTEM_PYTHON, "-I", "-S", "-c", "import trio"], cwd=tmp_path,
                           env=_isolated_env(tmp_path), capture_output=True, text=True, timeout=30)
    assert probe.returncode != 0 and "No module named 'trio'" in probe.stderr


def test_bundle_serves_a_client_over_plaintext_and_tls_and_answers_controls(bundle, tmp_path):
    from confluent_kafka import Consumer, Producer

    proc, ready = _start(bundle, tmp_path, [
        "--listener", "PLAINTEXT://127.0.0.1:0", "--listener", "SSL://127.0.0.1:0", "--tls-self-signed",
        "--controls", "0", "--console", "0", "--schema-registry", "0", "-c", "num.partitions=1"])
    try:
        controls = Controls(ready["controls"])
        assert {"reset", "snapshot", "restore", "advance-clock", "fail-requests"} <= set(controls.names())
        topic = f"bundle-{uuid.uuid4().hex[:8]}"
        tls = {"bootstrap.servers": ready["listeners"]["SSL"], "security.protocol": "SSL",
               "ssl.ca.location": ready["ca"]}
        for conf, value in (({"bootstrap.servers": ready["bootstrap"]}, b"plain"), (tls, b"tls")):
            producer = Producer(conf)
            producer.produce(topic, value)
            assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": ready["bootstrap"], "group.id": "g", "auto.offset.reset": "earliest"})
        consumer.subscribe([topic])
        got: list[bytes] = []
        for _ in range(60):
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) == 2:
                break
        consumer.close()
        assert got == [b"plain", b"tls"]

        # the controls change what the broker holds: reset removes the topic
        controls.reset()
        from confluent_kafka.admin import AdminClient

        listed = AdminClient({"bootstrap.servers": ready["bootstrap"]}).list_topics(timeout=30).topics
        assert topic not in listed

        with urllib.request.urlopen(ready["console"], timeout=30) as page:
            assert b"<html" in page.read().lower()
        with urllib.request.urlopen(ready["schema_registry"] + "subjects", timeout=30) as answer:
            assert json.loads(answer.read()) == []
    finally:
        terminate(proc)
    assert proc.wait(30) is not None


def test_bundle_says_what_it_was_built_for(bundle, tmp_path):
    """A start on another interpreter or machine is one line naming both, before any import of the
    compiled libraries; here the recorded target is altered in the unpacked copy."""
    first, _ = _start(bundle, tmp_path, ["--port", "0"])
    terminate(first)
    [target] = (tmp_path / "shiv").glob("*/site-packages/kafkalite/bundle_target.json")
    recorded = json.loads(target.read_text())
    assert recorded["cache_tag"] == sys.implementation.cache_tag
    target.write_text(json.dumps({**recorded, "machine": "elsewhere"}))
    out = subprocess.run([SYSTEM_PYTHON, "-I", "-S", str(bundle), "--port", "0"], cwd=tmp_path,
                         env=_isolated_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "this bundle was built for cpython-311 on Linux" in out.stderr and "elsewhere" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.franz
@pytest.mark.timeout(600)
def test_go_helper_runs_the_bundle_with_the_system_python(bundle, tmp_path):
    """go/kafkalitetest given only the bundle (KAFKALITE_CMD=kafkalite.pyz) and Debian's python3
    first on PATH: a franz-go test's broker is the one file, nothing installed."""
    import shutil

    from compat_tests.clients.golang import go_env

    go = shutil.which("go")
    assert go is not None, "go is not installed (scripts/install-test-deps.sh)"
    env = {**go_env(), "KAFKALITE_CMD": str(bundle), "SHIV_ROOT": str(tmp_path / "shiv"),
           "PATH": os.pathsep.join(["/usr/bin", "/bin", str(Path(go).parent)])}
    env.pop("PYTHONPATH", None)
    go_dir = Path(__file__).resolve().parents[2] / "go" / "kafkalitetest"
    result = subprocess.run(["go", "test", "-count=1", "-v", "-run", "TestSnapshotRestoreAndResetWithFranz", "./..."],
                            cwd=go_dir, env=env, capture_output=True, text=True, timeout=500)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "--- PASS: TestSnapshotRestoreAndResetWithFranz" in result.stdout
    assert list((tmp_path / "shiv").glob("*/site-packages/kafkalite")), "the bundle was not what ran"


def _debian_python(folder: str, version: str) -> Path:
    root = DEPS / folder
    assert (root / "usr" / "bin" / f"python{version}").exists(), \
        f"{root} has no python{version}: run scripts/install-test-deps.sh (scripts/debian_python.py)"
    return root


def _arm64_python311() -> list[str]:
    import shutil

    assert shutil.which("qemu-aarch64"), "qemu-aarch64 is not installed (scripts/install-test-deps.sh)"
    root = _debian_python("python-arm64-bookworm", "3.11")
    return ["qemu-aarch64", "-L", str(root), str(root / "usr/bin/python3.11")]


def _amd64_python313() -> list[str]:
    root = _debian_python("python-amd64-trixie", "3.13")
    libs = root / "usr/lib/x86_64-linux-gnu"  # trixie's own C library, newer than this system's
    return [str(libs / "ld-linux-x86-64.so.2"), "--library-path", str(libs), str(root / "usr/bin/python3.13")]


def _build(out: Path, *target: str) -> str:
    built = subprocess.run([sys.executable, "-m", "kafkalite", "bundle", str(out), *target],
                           capture_output=True, text=True, timeout=240)
    assert built.returncode == 0, built.stderr
    return built.stdout


@pytest.mark.timeout(420)
@pytest.mark.parametrize("target,python,native", [
    (("--platform", "linux-aarch64", "--python-version", "3.11"), _arm64_python311, "cpython-311-aarch64-linux-gnu"),
    (("--python-version", "3.13"), _amd64_python313, "cpython-313-x86_64-linux-gnu"),
], ids=["linux-aarch64-3.11", "linux-x86_64-3.13"])
def test_a_bundle_for_another_target_runs_on_that_targets_python(target, python, native, tmp_path):
    """Built here for another machine or Python: its compiled libraries are that target's wheels,
    the target's own Debian python3 runs it with nothing installed, a client's records and
    group commits round-trip through it (kio's parser, crc32c, zstd), its controls answer; and this
    machine's python3 is told in one line that the file is not for it."""
    from confluent_kafka import Consumer, Producer

    out = _build(tmp_path / "other.pyz", *target)
    assert "wheels for " in out and "kio" in out.splitlines()[2], out
    runner = python()
    proc, ready = _start(tmp_path / "other.pyz", tmp_path, ["--port", "0", "--controls", "0",
                                                           "-c", "num.partitions=1"], runner)
    try:
        [kio_native] = (tmp_path / "shiv").glob("*/site-packages/kio/_kio_native*.so")
        assert kio_native.name == f"_kio_native.{native}.so"
        producer = Producer({"bootstrap.servers": ready["bootstrap"], "compression.type": "zstd",
                             "enable.idempotence": True})
        for i in range(20):
            producer.produce("elsewhere", b"%d" % i, key=b"k")
        assert producer.flush(60) == 0
        consumer = Consumer({"bootstrap.servers": ready["bootstrap"], "group.id": "g",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe(["elsewhere"])
        got: list[bytes] = []
        for _ in range(120):
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) == 20:
                break
        consumer.commit(asynchronous=False)
        committed = consumer.committed(consumer.assignment(), timeout=30)
        consumer.close()
        assert got == [b"%d" % i for i in range(20)]
        assert [tp.offset for tp in committed] == [20]
        # under emulation the first control request pays for the HTTP stack's lazy imports
        assert "reset" in Controls(ready["controls"], timeout=150).names()
    finally:
        terminate(proc)
    refused = subprocess.run([SYSTEM_PYTHON, "-I", "-S", str(tmp_path / "other.pyz"), "--port", "0"],
                             cwd=tmp_path, env=_isolated_env(tmp_path / "here"), capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and "this bundle was built for" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr


CPU_TYPE_ARM64 = 0x0100000C


def _macho_cpu_types(library: bytes) -> set[int]:
    """The CPU types of a Mach-O library: one for a thin 64-bit file, each slice's for a
    universal (fat) one; empty for anything else (an ELF file, say)."""
    if library[:4] == struct.pack("<I", 0xFEEDFACF):
        return {struct.unpack_from("<I", library, 4)[0]}
    if library[:4] == struct.pack(">I", 0xCAFEBABE):
        count = struct.unpack_from(">I", library, 4)[0]
        return {struct.unpack_from(">I", library, 8 + 20 * i)[0] for i in range(count)}
    return set()


def test_a_macos_bundle_holds_the_macos_libraries(tmp_path):
    """A bundle for an Apple silicon Mac and Python 3.12 (not runnable here): every compiled
    library in it is an arm64 Mach-O for CPython 3.12 or the stable ABI, none is this machine's,
    and the target it checks at start is that Mac's."""
    out = tmp_path / "mac.pyz"
    _build(out, "--platform", "macos-arm64", "--python-version", "3.12")
    with zipfile.ZipFile(out) as archive:
        libraries = [n for n in archive.namelist() if n.endswith(".so")]
        assert {n.split("/")[1] for n in libraries} >= {"kio", "crc32c", "cramjam", "rpds", "cryptography"}
        for name in libraries:
            assert CPU_TYPE_ARM64 in _macho_cpu_types(archive.read(name)), name
            assert "cpython-312-darwin" in name or "abi3" in name, name
        target = json.loads(archive.read("site-packages/kafkalite/bundle_target.json"))
    assert target == {"cache_tag": "cpython-312", "system": "Darwin", "machine": "arm64"}
