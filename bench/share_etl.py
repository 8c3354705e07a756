"""Share groups under a real client's own load: franz-go's TestShareGroupETL (pkg/kgo, franz-go
v1.22.2), run against kafkalite (``--nodes 3``) and Apache Kafka, the test's seconds and the
broker's CPU seconds.

The test produces N records (500 000 by default, KGO_TEST_RECORDS) over a 3-partition and a
1-partition topic; one share group of up to nine consumers (accepting, releasing, rejecting,
bailing out, joining and leaving mid-run) copies every accepted record to a second pair of
topics, from which a second share group copies them to a third; it passes once every key
reached the second level and the counts agree. The topics are made with KGO_TEST_RF replicas:
3 on kafkalite's three nodes and on ``kafkalite@PATH`` (another checkout's kafkalite, ``--nodes 3``
too: the code before a change), 1 on the single Kafka node (compat_tests/reference.py, with the
benchmarks' JVM settings). Each run starts a fresh broker; brokers alternate. Goal: kafkalite's
median at most Kafka's.

The module comes from the Go module proxy into the project's Go cache (.cache/go, as
compat_tests/clients/golang.py uses it); its source is copied to a temporary directory outside
the repository and its test binary built there, once per invocation.

    python -m bench.share_etl [--runs 3] [--records 500000] [--brokers kafkalite,kafka,kafkalite@PATH]
                              [--json FILE]
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from bench import peers
from bench.stats import Report, Target, alternate, failure, main_with_records

FRANZ_GO = "github.com/twmb/franz-go@v1.22.2"
TEST = "TestShareGroupETL"
TEST_TIMEOUT_S = 600  # the test bounds itself at 4 minutes; this is the binary's own alarm
KAFKALITE_NODES = 3
PASSED = re.compile(rf"^--- PASS: {TEST} \(([\d.]+)s\)", re.M)


def _go_env() -> dict[str, str]:
    from compat_tests.clients.golang import go_env

    return go_env()


def _go(args: list[str], cwd: Path, timeout: float = 900) -> str:
    done = subprocess.run(["go", *args], cwd=cwd, env=_go_env(), capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"go {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def build_test_binary(work: Path) -> Path:
    """franz-go's kgo test binary, built in `work` from a copy of the module's source."""
    if shutil.which("go") is None:
        raise RuntimeError("go is not installed (bench.share_etl builds franz-go's own test)")
    info = json.loads(_go(["mod", "download", "-json", FRANZ_GO], cwd=work))
    source = work / "franz-go"
    shutil.copytree(info["Dir"], source)
    for path in source.rglob("*"):  # the module cache's files are read-only
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    binary = work / "kgo.test"
    _go(["test", "-c", "-o", str(binary), "./pkg/kgo"], cwd=source)
    return binary


def _cpu_seconds(pid: int | None) -> float | None:
    if pid is None:
        return None
    import psutil

    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return t.user + t.system


def run_test(binary: Path, bootstrap: str, records: int, rf: int) -> tuple[float, str]:
    """(the test's own seconds, its output); RuntimeError when it did not pass."""
    env = {**os.environ, "KGO_SEEDS": bootstrap, "KGO_TEST_RF": str(rf), "KGO_TEST_RECORDS": str(records),
           "KGO_LOG_LEVEL": "warn"}
    done = subprocess.run([str(binary), "-test.run", f"^{TEST}$", "-test.count=1", "-test.v",
                           f"-test.timeout={TEST_TIMEOUT_S}s"], cwd=binary.parent, env=env,
                          capture_output=True, text=True, timeout=TEST_TIMEOUT_S + 60)
    out = done.stdout + done.stderr
    m = PASSED.search(out)
    if done.returncode != 0 or m is None:
        failed = [line.strip() for line in out.splitlines()
                  if ("share_test.go" in line and "NOT DELETING" not in line) or line.startswith("--- FAIL")]
        raise RuntimeError(f"{TEST} failed (exit {done.returncode}): " + " | ".join(failed[-4:])[-1500:])
    return float(m.group(1)), out


def _start(name: str) -> peers.Peer:
    nodes = ["--nodes", str(KAFKALITE_NODES)]
    if name == "kafkalite":
        return peers.start_kafkalite(nodes)
    if (checkout := peers.checkout_of(name)) is not None:
        for attempt in range(3):
            try:  # a port after the first one picked free may be taken by the time the nodes bind it
                return peers.start_checkout(checkout, name, extra_args=nodes)
            except peers.PeerUnavailable:
                if attempt == 2:
                    raise
    return peers.start_peer(name)


def _replicas(name: str) -> int:
    return KAFKALITE_NODES if name == "kafkalite" or peers.checkout_of(name) is not None else 1


def run(brokers: list[str], runs: int, records: int) -> Report:
    report = Report(f"share_etl: franz-go's {TEST} ({FRANZ_GO})",
                    settings={"runs": runs, "records": records, "kafkalite": f"--nodes {KAFKALITE_NODES}, RF 3",
                              "kafka": "one node, RF 1"})
    secs_m = report.metric("share_etl", f"{TEST}, the test's time", "s", False,
                           targets=[Target("ratio_at_most", 1.0, peer="kafka")] if "kafka" in brokers else [])
    cpu_m = report.metric("share_etl", "broker CPU during the test", "s", False)
    with tempfile.TemporaryDirectory(prefix="share-etl-") as tmp:
        binary = build_test_binary(Path(tmp))
        for rnd, name in alternate(brokers, runs):
            try:
                peer = _start(name)
            except Exception as exc:  # noqa: BLE001
                secs_m.fail(name, failure(f"round {rnd}: start", exc))
                continue
            try:
                cpu0 = _cpu_seconds(peer.pid)
                t0 = time.monotonic()
                secs, _ = run_test(binary, peer.bootstrap, records, _replicas(name))
                cpu1 = _cpu_seconds(peer.pid)
                secs_m.add(name, secs)
                if cpu0 is not None and cpu1 is not None:
                    cpu_m.add(name, cpu1 - cpu0)
                print(f"round {rnd} {name}: {secs:.1f} s (wall {time.monotonic() - t0:.1f} s)", flush=True)
            except Exception as exc:  # noqa: BLE001
                secs_m.fail(name, failure(f"round {rnd}", exc))
                print(f"round {rnd} {name}: failed: {exc}", flush=True)
            finally:
                peer.stop()
    return report


def main(argv: list[str] | None = None) -> Report:
    return main_with_records(__doc__, run, argv, 500_000, "KGO_TEST_RECORDS (default 500 000)")


if __name__ == "__main__":
    main()
