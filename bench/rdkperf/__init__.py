"""rdkperf: our librdkafka load generator (rdkperf.c), built at bench time and run as a process.

The binary is compiled with gcc into ``.deps/rdkperf/``, named by a hash of the source and of
the library it links, so an edited rdkperf.c is rebuilt on its next use and checkouts sharing
``.deps`` never run each other's build. The header comes from Debian's librdkafka-dev
(``apt-get install librdkafka-dev``, done by scripts/install-test-deps.sh). The library is the
one confluent-kafka's wheel bundles (librdkafka 2.16, the client of the other benchmarks; run
path set to it) when there is one, else Debian's: Debian's 2.0.2 cannot read Tansu 0.6.0's
ApiVersions v3 answer (a read underflow in its tagged fields), so it could not measure Tansu.
librdkafka keeps its ABI, so 2.0.2's header serves the newer library. :func:`produce_cmd` / :func:`consume_cmd` give its command lines;
:func:`run` runs one and returns its JSON line (rdkperf.c's header describes the fields).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

SOURCE = Path(__file__).with_name("rdkperf.c")
BUILD_DIR = Path(__file__).resolve().parent.parent.parent / ".deps" / "rdkperf"
INSTALL = "apt-get install librdkafka-dev (or: bash scripts/install-test-deps.sh)"


def _library() -> list[str]:
    """gcc's arguments that link librdkafka: confluent-kafka's bundled copy, else the system's."""
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is not None and spec.origin is not None:
        libs = Path(spec.origin).parent.parent / "confluent_kafka.libs"
        found = sorted(libs.glob("librdkafka*.so*"))
        if found:
            return [str(found[0]), f"-Wl,-rpath,{libs}"]
    return ["-lrdkafka"]


def binary() -> Path:
    """The built rdkperf, compiled first if this source and library have not been built yet."""
    library = _library()
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(library).encode()).hexdigest()[:16]
    path = BUILD_DIR / f"rdkperf-{digest}"
    if path.exists():
        return path
    gcc = shutil.which("gcc")
    if gcc is None:
        raise SystemExit("rdkperf: no gcc on PATH (apt-get install gcc)")
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    # compiled beside its final name and renamed: parallel test workers may build at once
    fd, tmp = tempfile.mkstemp(dir=BUILD_DIR, prefix=".rdkperf-")
    os.close(fd)
    try:
        proc = subprocess.run([gcc, "-O2", "-Wall", "-o", tmp, str(SOURCE), *library, "-lpthread"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            if "librdkafka/rdkafka.h" in proc.stderr or "-lrdkafka" in proc.stderr:
                raise SystemExit(f"rdkperf needs librdkafka's headers and library: {INSTALL}")
            raise SystemExit(f"rdkperf: gcc failed:\n{proc.stderr.strip()[-2000:]}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _props(props: dict[str, str] | None) -> list[str]:
    return [arg for key, value in (props or {}).items() for arg in ("-X", f"{key}={value}")]


def produce_cmd(bootstrap: str, topic: str, records: int, size: int, producers: int = 1, linger_ms: int = 5,
                batch_bytes: int | None = None, transactional_id: str | None = None, commit_ms: int = 100,
                timeout_s: float = 120.0, props: dict[str, str] | None = None) -> list[str]:
    """``producers`` idempotent producers (threads of one process), ``records`` records each;
    transactional (ids ``transactional_id-0``, ...; a commit every ``commit_ms``) when
    ``transactional_id`` is given."""
    cmd = [str(binary()), "produce", "-b", bootstrap, "-t", topic, "-n", str(records), "-s", str(size),
           "-p", str(producers), "-l", str(linger_ms), "-w", str(timeout_s)]
    if batch_bytes is not None:
        cmd += ["-B", str(batch_bytes)]
    if transactional_id is not None:
        cmd += ["-x", transactional_id, "-T", str(commit_ms)]
    return cmd + _props(props)


def consume_cmd(bootstrap: str, topic: str, records: int, timeout_s: float = 120.0,
                isolation_level: str = "read_committed", props: dict[str, str] | None = None) -> list[str]:
    """Read ``records`` records from the beginning of every partition of ``topic`` (assign(), no group)."""
    return [str(binary()), "consume", "-b", bootstrap, "-t", topic, "-n", str(records), "-w", str(timeout_s),
            "-X", f"isolation.level={isolation_level}"] + _props(props)


def run(cmd: Sequence[str], timeout_s: float) -> dict:
    """Run one rdkperf command; its JSON line, or RuntimeError with its stderr when it fails."""
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"rdkperf timed out after {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"rdkperf exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"rdkperf printed no figures: {proc.stdout.strip()[-300:]}")
    return json.loads(lines[-1])
