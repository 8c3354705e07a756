"""The one-file broker (``kafkalite bundle``): its start to the first answered Metadata, beside the
installed package's, and the file's size.

The bundle is built from this checkout and its venv once, then run as a user without an install
runs it: ``/usr/bin/python3 -I -S kafkalite.pyz --host 127.0.0.1 --port PORT --data-dir EMPTY``,
with only PATH, HOME and SHIV_ROOT in its environment. Its first run (unmeasured, like the
warm-up of the installed package) unpacks it into SHIV_ROOT and writes the bytecode there; every
later start imports from those files. The installed package is measured as ``bench.startup``
does (``python -P -m kafkalite``, as ``kafkalite.start()`` runs it). The figure is Popen until a
Metadata response arrives (polled every 2 ms); runs alternate (bundle, installed, ...).

Goal: the bundle's median within 1.5x the installed package's.

    python -m bench.bundle_start [--runs 7] [--json out.json]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import peers, wire
from bench.startup import measure_once as measure_installed
from bench.stats import Report, Target, alternate, main_with_runs

TIMEOUT = 60.0
SYSTEM_PYTHON = "/usr/bin/python3"
BUNDLE = "kafkalite (bundle)"
INSTALLED = "kafkalite"


def build_bundle(folder: Path) -> Path:
    out = folder / "kafkalite.pyz"
    built = subprocess.run([sys.executable, "-m", "kafkalite", "bundle", str(out)], capture_output=True, text=True,
                           timeout=300)
    if built.returncode != 0:
        raise RuntimeError(f"kafkalite bundle failed: {built.stderr[-800:]}")
    return out


def measure_bundle(bundle: Path, home: Path, timeout: float = TIMEOUT) -> float:
    port = peers.free_port()
    workdir = Path(tempfile.mkdtemp(prefix="bench-bundle-"))
    config = [a for k, v in peers.KAFKALITE_CONFIG.items() for a in ("-c", f"{k}={v}")]
    cmd = [SYSTEM_PYTHON, "-I", "-S", str(bundle), "--host", peers.HOST, "--port", str(port),
           "--data-dir", str(workdir), *config]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "SHIV_ROOT": str(home / "shiv")}
    try:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        try:
            t1 = wire.wait_for_metadata(peers.HOST, port, timeout, poll_interval=0.002,
                                        alive=lambda: proc.poll() is None)
        except wire.WireError as exc:
            peers.terminate(proc)
            raise RuntimeError(f"{exc}; {proc.stderr.read().decode(errors='replace')[-800:] if proc.stderr else ''}") from exc
        peers.terminate(proc)
        return t1 - t0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(runs: int) -> Report:
    home = Path(tempfile.mkdtemp(prefix="bench-bundle-home-"))
    try:
        bundle = build_bundle(home)
        report = Report("bundle start: python3 -I -S kafkalite.pyz to first answered Metadata, beside the installed "
                        "package", settings={"runs": runs, "bundle_size_mb": round(bundle.stat().st_size / 1e6, 1),
                                             "python": SYSTEM_PYTHON, "poll_interval_ms": 2})
        metric = report.metric("bundle_start", "start to first Metadata", "ms", higher_is_better=False,
                               targets=[Target("ratio_at_most", 1.5, broker=BUNDLE, peer=INSTALLED)])
        first = time.monotonic()
        measure_bundle(bundle, home)
        report.notes.append(f"first run of the bundle (unpacks it): {(time.monotonic() - first) * 1000:.0f} ms")
        measure_installed(INSTALLED)
        for _, which in alternate([BUNDLE, INSTALLED], runs):
            try:
                secs = measure_bundle(bundle, home) if which == BUNDLE else measure_installed(INSTALLED)[0]
            except RuntimeError as exc:
                metric.fail(which, str(exc)[-600:])
                continue
            metric.add(which, secs * 1000.0)
        return report
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str] | None = None) -> Report:
    return main_with_runs(__doc__, run, argv, runs=7)


if __name__ == "__main__":
    main()
