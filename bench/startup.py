"""Process start to the first answered Metadata request, and the broker's RSS at that moment.

For each broker: pick a free port, ``Popen`` the broker listening on it, then poll
``connect`` + ApiVersions v0 + Metadata (the highest version both sides know, encoded with
kio; see ``bench/wire.py``) every 2 ms until a Metadata response arrives. The figure is
Popen to that response, not to the broker's ready line. RSS is read from the broker process
(psutil, else /proc/PID/status) right after the response, and so is the CPU time (user +
system) the broker process has used by then: on a busy machine the wall time stretches, the
CPU time much less, so it tells start-up cost apart from waiting for a core.

kafkalite is started exactly as ``kafkalite.start()`` does (``python -P -m kafkalite --host
127.0.0.1 --port PORT --data-dir EMPTY_TMP_DIR``, same environment); Tansu with its in-memory
storage engine; Apache Kafka (``kafka``) as compat_tests/reference.py runs it, its log dir formatted
before the clock starts. Runs alternate (kafkalite, tansu, kafkalite, tansu, ...); one unmeasured
warm-up run per broker first fills the page cache and Python's bytecode cache.

Targets: kafkalite <= 500 ms and <= 80 MB (10^6 bytes); later <= 200 ms and <= 35 MB.

``kafkalite-3nodes`` (any ``kafkalite-Nnodes``) is kafkalite started with ``--nodes 3``: three node
ids on three ports over one copy of the data; the Metadata that stops the clock lists all three.

    python -m bench.startup [--runs 7] [--brokers kafkalite,kafkalite-3nodes,tansu] [--json out.json] [--explain]

``kafkalite-forked`` is kafkalite forked by a warm fork server (kafkalite.forkserver, started
once, no broker started ahead), as the test suites start their brokers (kafkalite/tests/
suite_brokers.py): the clock runs from the start request to the first answered Metadata, and
the CPU is the forked child's. Its RSS counts the pages it shares with the server.

``kafkalite+controls`` is kafkalite with the controls endpoint on (``--controls 0``), as the
pytest plugin starts it.

``--explain`` starts kafkalite once more under ``python -X importtime`` and lists the imports
that take the longest (cumulative and self time).
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench import peers, wire
from bench.stats import Report, Target, alternate, apply_common_arguments, common_parser, emit
from kafkalite.forkserver import ForkServer

TIMEOUT = 30.0
FORKED = "kafkalite-forked"
KAFKA_TIMEOUT = 120.0  # a JVM broker on a loaded 2-core machine


def _cpu_seconds(pid: int) -> float | None:
    """user + system CPU seconds the process has used so far (None without psutil)."""
    try:
        import psutil

        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    except Exception:  # noqa: BLE001
        return None


_fork_server: ForkServer | None = None


def _measure_forked(timeout: float) -> tuple:
    """measure_once for ``kafkalite-forked``: from the start request to the first Metadata."""
    global _fork_server
    if _fork_server is None:
        _fork_server = ForkServer(start_ahead=False)
        atexit.register(_fork_server.close)
    port = peers.free_port()
    t0 = time.monotonic()
    broker = _fork_server.start(port=port, timeout=timeout)
    try:
        t1 = wire.wait_for_metadata(peers.HOST, port, timeout, poll_interval=0.002)
        return t1 - t0, peers.process_rss_bytes(broker.pid), _cpu_seconds(broker.pid)
    finally:
        broker.close()


def measure_once(name: str, timeout: float | None = None, importtime: bool = False) -> tuple:
    """Seconds from Popen to the first answered Metadata, RSS bytes and CPU seconds then.

    ``importtime``: run a Python broker with ``-X importtime`` and return its import report
    as a third element (the timing is then inflated and not comparable).
    """
    if timeout is None:
        timeout = KAFKA_TIMEOUT if name == "kafka" else TIMEOUT
    if name == FORKED:
        return _measure_forked(timeout)
    port = peers.free_port()
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-startup-{name.replace('/', '_')}-"))
    cmd, env = peers.launch_command(name, port, workdir)
    if env is not None:
        # An installed kafkalite has its bytecode compiled (pip does it); in a checkout the
        # warm-up run writes it, unless the environment forbids that.
        env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if importtime:
        cmd = [cmd[0], "-X", "importtime", *cmd[1:]]
    log = workdir.parent / (workdir.name + ".log")
    logf = open(log, "wb")
    try:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=logf,
                                stdin=subprocess.DEVNULL)
        try:
            t1 = wire.wait_for_metadata(peers.HOST, port, timeout, poll_interval=0.002,
                                        alive=lambda: proc.poll() is None)
            rss = peers.process_rss_bytes(proc.pid)
            cpu = _cpu_seconds(proc.pid)
            if importtime:
                logf.flush()
                return t1 - t0, rss, log.read_text(errors="replace")
        except wire.WireError as exc:
            logf.flush()
            raise RuntimeError(f"{exc}; log: {log.read_text(errors='replace')[-800:]}") from exc
        finally:
            peers.terminate(proc)
        return t1 - t0, rss, cpu
    finally:
        logf.close()
        shutil.rmtree(workdir, ignore_errors=True)
        log.unlink(missing_ok=True)


def _one_line(exc: BaseException, limit: int = 600) -> str:
    text = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text if len(text) <= limit else text[:150] + " ... " + text[-(limit - 150):]


def run(brokers: list[str], runs: int, warmup: bool = True) -> Report:
    report = Report("startup: Popen to first answered Metadata, RSS then",
                    settings={"runs": runs, "warmup": warmup, "poll_interval_ms": 2})
    t_metric = report.metric("startup", "start to first Metadata", "ms", higher_is_better=False,
                             targets=[Target("at_most", 500.0), Target("at_most", 200.0)])
    m_metric = report.metric("startup", "RSS at first Metadata", "MB", higher_is_better=False,
                             targets=[Target("at_most", 80.0), Target("at_most", 35.0)])
    c_metric = report.metric("startup", "broker CPU until first Metadata", "ms", higher_is_better=False)
    usable = []
    for b in brokers:
        try:
            if peers.is_kafkalite(b) or b == FORKED:
                reason = peers.kafkalite_available()
                if reason:
                    raise peers.PeerUnavailable(reason)
            elif peers.checkout_of(b) is not None:
                peers.launch_command(b, peers.free_port(), Path(tempfile.gettempdir()))  # the checkout is there
            elif b == "tansu":
                peers.tansu_binary()
            elif b == "kafka":
                peers.kafka_version()
            else:
                raise peers.PeerUnavailable("startup only times brokers it launches itself")
            if warmup:
                measure_once(b)
            usable.append(b)
        except (peers.PeerUnavailable, RuntimeError) as exc:
            t_metric.fail(b, _one_line(exc))
            m_metric.fail(b, "not run")
    for _, b in alternate(usable, runs):
        try:
            secs, rss, cpu = measure_once(b)
        except RuntimeError as exc:
            t_metric.fail(b, _one_line(exc))
            continue
        t_metric.add(b, secs * 1000.0)
        m_metric.add(b, rss / 1e6)
        if cpu is not None:
            c_metric.add(b, cpu * 1000.0)
    return report


def explain_imports(top: int = 20) -> str:
    """Where kafkalite's start-up goes: its slowest imports by cumulative time."""
    secs, rss, log = measure_once("kafkalite", importtime=True)[:3]
    rows = []
    for line in log.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, self_us, cum_us, name = [p.strip() for p in line.replace("import time:", "|").split("|")]
        if self_us.isdigit():
            rows.append((int(cum_us), int(self_us), name))
    total = sum(self_us for _, self_us, _ in rows)
    lines = [f"kafkalite under -X importtime: first Metadata after {secs * 1000:.0f} ms "
             f"(inflated by the tracing), imports {total / 1000:.0f} ms self-time in total, "
             f"RSS {rss / 1e6:.1f} MB",
             "  cumul ms   self ms   module (indent = imported by the line above it)"]
    # top-level imports first: the ones with the largest cumulative time
    for cum, self_us, name in sorted(rows, reverse=True)[:top]:
        lines.append(f"  {cum / 1000:8.1f}  {self_us / 1000:8.1f}   {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> Report:
    parser = common_parser(__doc__, runs=7)
    parser.add_argument("--no-warmup", action="store_true", help="skip the unmeasured first run")
    parser.add_argument("--explain", action="store_true",
                        help="also start kafkalite once under -X importtime and list its slowest imports")
    args = parser.parse_args(argv)
    apply_common_arguments(args)
    report = run(peers.parse_brokers(args.brokers), args.runs, warmup=not args.no_warmup)
    if args.explain:
        try:
            report.notes.append(explain_imports())
        except (peers.PeerUnavailable, RuntimeError) as exc:
            report.notes.append(f"--explain: {_one_line(exc)}")
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
