"""Pictures of the benchmarks' curves, for docs/performance.md: a reader sees the shape at a glance.

Each picture is drawn from the JSON a benchmark wrote (``--json FILE``), never from figures typed in:

* ``--scale FILE`` (bench/scale.py, several files merged): create, stop, restart → Metadata and
  RSS after restart against the partition count, a line a broker, both axes logarithmic;
* ``--idle FILE`` (bench/idle_connections.py): produce p50 and p99 against the idle connections
  open beside them, a line a broker;
* ``--soak FILE`` (bench/soak.py): RSS and open files against the minutes of the soak, with the
  minute from which the verdict measures growth.

    python -m bench.charts [--scale FILE ...] [--idle FILE] [--soak FILE] [--out DIR]

writes scale.png, idle_connections.png and soak.png (those asked for) into DIR (default
docs/charts). Rules: medians are drawn, as the tables print them; a point a broker did not
measure (a failed round, a size it was not run at) is left out, never drawn as zero.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display is needed or wanted

from matplotlib.figure import Figure  # noqa: E402  (after the backend is chosen)

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "docs" / "charts"
# bench/scale.py's metric names: (title in the picture, the name with {n} for the partition count)
SCALE_PANELS = (("create", "create {n} partitions"), ("stop (SIGTERM → exit)", "stop (SIGTERM to exit), {n}"),
                ("restart → first Metadata", "restart to first Metadata, {n}"),
                ("RSS after restart", "RSS after restart, {n}"))
_SCALE_NAME = {pattern: re.compile("^" + re.escape(pattern).replace(r"\{n\}", r"(\d+)") + "$")
               for _title, pattern in SCALE_PANELS}
_IDLE_ROW = re.compile(r"^(?P<broker>.+), (?P<count>\d+) idle$")
Series = dict[str, dict[int, float]]   # broker → x → median


def load(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def scale_series(reports: list[dict[str, Any]]) -> dict[str, tuple[str, Series]]:
    """pattern → (unit, broker → partitions → median), later reports filling what earlier ones lack."""
    out: dict[str, tuple[str, Series]] = {}
    for report in reports:
        for metric in report["metrics"]:
            for pattern, rx in _SCALE_NAME.items():
                m = rx.match(metric["metric"])
                if m is None:
                    continue
                unit, series = out.setdefault(pattern, (metric["unit"], {}))
                for broker, med in metric["median"].items():
                    if med is not None:
                        series.setdefault(broker, {}).setdefault(int(m.group(1)), float(med))
    return out


def scale_figure(reports: list[dict[str, Any]]) -> Figure:
    found = scale_series(reports)
    fig = Figure(figsize=(10, 7.5), layout="constrained")
    axes = fig.subplots(2, 2)
    for ax, (title, pattern) in zip(axes.flat, SCALE_PANELS):
        unit, series = found.get(pattern, ("", {}))
        _lines(ax, series)
        ax.set_title(title)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("partitions")
        ax.set_ylabel(unit)
    fig.suptitle("What partitions cost, by count (medians; bench/scale.py)")
    return fig


def idle_series(report: dict[str, Any], metric_name: str) -> Series:
    series: Series = {}
    for metric in report["metrics"]:
        if metric["metric"] != metric_name:
            continue
        for row, med in metric["median"].items():
            m = _IDLE_ROW.match(row)
            if m is not None and med is not None:
                series.setdefault(m.group("broker"), {})[int(m.group("count"))] = float(med)
    return series


def idle_figure(report: dict[str, Any]) -> Figure:
    fig = Figure(figsize=(10, 4), layout="constrained")
    for ax, name in zip(fig.subplots(1, 2), ("produce p50", "produce p99")):
        _lines(ax, idle_series(report, name))
        ax.set_title(name)
        ax.set_xscale("log")
        ax.set_xlabel("idle connections open")
        ax.set_ylabel("ms")
        ax.set_ylim(bottom=0)
    fig.suptitle("Produce round trips beside idle connections (medians; bench/idle_connections.py)")
    return fig


def soak_figure(soak: dict[str, Any]) -> Figure:
    samples = soak["samples"]
    minutes = [s["minute"] for s in samples]
    fig = Figure(figsize=(10, 4), layout="constrained")
    for ax, key, label in zip(fig.subplots(1, 2), ("rss_mib", "open_files"), ("RSS (MiB)", "open files")):
        ax.plot(minutes, [s[key] for s in samples], marker=".", label="kafkalite")
        ax.axvline(soak["settle_min"], color="grey", linestyle=":", label="growth measured from here")
        ax.set_title(label)
        ax.set_xlabel("minutes")
        ax.set_ylim(bottom=0)
        ax.legend()
    errors = sum(len(met) for met in soak["errors"].values())   # workload → the errors it met
    fig.suptitle(f"{soak['minutes']:g} minutes of produce, consume, group, transaction and topic churn "
                 f"(bench/soak.py; {errors} errors)")
    return fig


def _lines(ax: Any, series: Series) -> None:
    for broker, points in sorted(series.items()):
        xs = sorted(points)
        ax.plot(xs, [points[x] for x in xs], marker="o", label=broker)
    if series:
        ax.legend()


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(prog="python -m bench.charts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", action="append", default=[], metavar="FILE", help="bench.scale --json output")
    parser.add_argument("--idle", metavar="FILE", help="bench.idle_connections --json output")
    parser.add_argument("--soak", metavar="FILE", help="bench.soak --json output")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="where the PNG files go (default docs/charts)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    drawn: list[tuple[str, Figure]] = []
    if args.scale:
        drawn.append(("scale.png", scale_figure([load(p) for p in args.scale])))
    if args.idle:
        drawn.append(("idle_connections.png", idle_figure(load(args.idle))))
    if args.soak:
        drawn.append(("soak.png", soak_figure(load(args.soak))))
    if not drawn:
        parser.error("nothing to draw: give --scale, --idle or --soak")
    written = []
    for name, fig in drawn:
        fig.savefig(out / name, dpi=80)
        written.append(out / name)
        print(out / name)
    return written


if __name__ == "__main__":
    main()
