"""kafkalite's image: ``podman run`` to the first answered Metadata, beside the kafkalite process
start measured the same way, and the image's size.

The container: the image built from this checkout on the local Debian base
(``container_tests.podman.build_image()``, cached by content; scripts/install-test-deps.sh makes
the base), run detached with its port 9092 published at a free loopback port and advertised
there. The figure is ``Popen`` of ``podman run`` until a Metadata response arrives through the
published port (connect + ApiVersions + Metadata polled every 2 ms, as ``bench.startup`` does),
so it includes podman creating and starting the container. The process: ``bench.startup``'s
measurement of ``python -P -m kafkalite``. Runs alternate (container, process, ...), after one
unmeasured warm-up of each.

    python -m bench.container_start [--runs 5] [--json out.json]
"""

from __future__ import annotations

import subprocess
import time

from bench import peers, wire
from bench.startup import measure_once as measure_process
from bench.stats import Report, alternate, main_with_runs
from container_tests import podman

TIMEOUT = 60.0
CONTAINER = "kafkalite (container)"
PROCESS = "kafkalite"


def measure_container(image: str, timeout: float = TIMEOUT) -> float:
    port = peers.free_port()
    cmd = podman.podman_cmd("run", "--detach", "--publish", f"127.0.0.1:{port}:9092",
                            "--env", f"KAFKALITE_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:{port}", image)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        t1 = wire.wait_for_metadata(peers.HOST, port, timeout, poll_interval=0.002,
                                    alive=lambda: proc.poll() in (None, 0))
    except wire.WireError as exc:
        _, err = proc.communicate(timeout=60)
        raise RuntimeError(f"{exc}; podman: {err.decode(errors='replace')[-800:]}") from exc
    finally:
        out, _ = proc.communicate(timeout=60)
        if out.strip():
            podman.remove(out.decode().strip())
    return t1 - t0


def run(runs: int) -> Report:
    image = podman.build_image()
    size = podman.image_size(image)
    report = Report("container start: podman run to first answered Metadata, beside the process",
                    settings={"runs": runs, "image": image, "image_size_mb": round(size / 1e6, 1),
                              "poll_interval_ms": 2})
    metric = report.metric("container_start", "start to first Metadata", "ms", higher_is_better=False)
    size_metric = report.metric("container_start", "image size", "MB", higher_is_better=False)
    size_metric.add(CONTAINER, size / 1e6)
    measure_container(image)
    measure_process("kafkalite")
    for _, which in alternate([CONTAINER, PROCESS], runs):
        try:
            secs = measure_container(image) if which == CONTAINER else measure_process("kafkalite")[0]
        except RuntimeError as exc:
            metric.fail(which, str(exc)[-600:])
            continue
        metric.add(which, secs * 1000.0)
    report.notes.append(f"storage driver: {podman.podman('info', '--format', '{{.Store.GraphDriverName}}').strip()}")
    return report


def main(argv: list[str] | None = None) -> Report:
    return main_with_runs(__doc__, run, argv, runs=5)


if __name__ == "__main__":
    main()
