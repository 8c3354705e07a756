"""Medians, ratios, targets, and the table / JSON every benchmark prints.

A benchmark collects :class:`Metric` objects (one per measured quantity, with the per-run
values of every broker) into a :class:`Report`; the report prints a human-readable table
and, with ``--json FILE``, writes the same figures for machines.
"""

from __future__ import annotations

import argparse

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

OURS = "kafkalite"


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


@dataclass
class Target:
    """A goal for one metric.

    kind: ``at_most`` / ``at_least`` (an absolute bound on ``broker``'s median) or
    ``ratio_at_least`` / ``ratio_at_most`` (``broker``'s median over ``peer``'s median).
    """

    kind: str
    value: float
    broker: str = OURS
    peer: str | None = None

    def describe(self, unit: str) -> str:
        if self.kind == "at_most":
            return f"<= {_fmt(self.value)} {unit}"
        if self.kind == "at_least":
            return f">= {_fmt(self.value)} {unit}"
        if self.kind == "ratio_at_least":
            return f">= {self.value:g}x {self.peer}"
        if self.kind == "ratio_at_most":
            return f"<= {self.value:g}x {self.peer}"
        raise ValueError(self.kind)

    def check(self, medians: dict[str, float | None]) -> bool | None:
        mine = medians.get(self.broker)
        if mine is None:
            return None
        if self.kind == "at_most":
            return mine <= self.value
        if self.kind == "at_least":
            return mine >= self.value
        r = ratio(mine, medians.get(self.peer or ""))
        if r is None:
            return None
        return r >= self.value if self.kind == "ratio_at_least" else r <= self.value


@dataclass
class Metric:
    benchmark: str
    name: str
    unit: str
    higher_is_better: bool
    values: dict[str, list[float]] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=dict)

    def add(self, broker: str, value: float) -> None:
        self.values.setdefault(broker, []).append(value)

    def fail(self, broker: str, message: str) -> None:
        self.errors.setdefault(broker, []).append(message)

    def medians(self) -> dict[str, float | None]:
        return {b: median(v) for b, v in self.values.items()}

    def ratios(self, reference: str = OURS) -> dict[str, float | None]:
        """``reference``'s median over each other broker's median."""
        meds = self.medians()
        return {b: ratio(meds.get(reference), m) for b, m in meds.items() if b != reference}

    def to_json(self) -> dict:
        meds = self.medians()
        return {
            "benchmark": self.benchmark,
            "metric": self.name,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "runs": self.values,
            "median": meds,
            "ratio_kafkalite_over": self.ratios(),
            "targets": [
                {**asdict(t), "text": t.describe(self.unit), "met": t.check(meds)} for t in self.targets
            ],
            "errors": self.errors,
        }


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    ax = abs(x)
    if ax >= 1000:
        return f"{x:,.0f}"
    if ax >= 100:
        return f"{x:.1f}".removesuffix(".0")
    if ax >= 1:
        return f"{x:.3g}" if ax < 10 else f"{x:.2f}".rstrip("0").rstrip(".")
    return f"{x:.3g}"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, r in enumerate(rows):
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


@dataclass
class Report:
    title: str
    settings: dict = field(default_factory=dict)
    metrics: list[Metric] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    loadavg_at_start: tuple[float, float, float] | None = field(default_factory=lambda: _loadavg())

    def metric(self, benchmark: str, name: str, unit: str, higher_is_better: bool,
               targets: Iterable[Target] = ()) -> Metric:
        m = Metric(benchmark, name, unit, higher_is_better, targets=list(targets))
        self.metrics.append(m)
        return m

    def extend(self, other: "Report") -> None:
        self.metrics.extend(other.metrics)
        self.notes.extend(other.notes)
        for k, v in other.settings.items():
            self.settings[k] = v

    def render(self) -> str:
        lines = [f"== {self.title} =="]
        load = _loadavg()
        if load is not None:
            cpus = os.cpu_count() or 1
            warn = "  (busy machine: figures are noisy)" if load[0] > 0.5 * cpus else ""
            lines.append(f"load average now: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {cpus} CPUs{warn}")
        if self.settings:
            lines.append("settings: " + ", ".join(f"{k}={v}" for k, v in self.settings.items()))
        from bench.peers import KAFKALITE_CONFIG

        if KAFKALITE_CONFIG:
            lines.append("kafkalite config: " + ", ".join(f"{k}={v}" for k, v in KAFKALITE_CONFIG.items()))
        rows = [["benchmark", "metric", "broker", "median", "unit", "per-run values",
                 "kafkalite/broker", "target", "met"]]
        for m in self.metrics:
            meds = m.medians()
            rats = m.ratios()
            brokers = list(dict.fromkeys([*m.values, *m.errors]))
            brokers.sort(key=lambda b: b != OURS)  # ours first, peers in the order run
            for i, b in enumerate(brokers):
                runs = " ".join(_fmt(v) for v in m.values.get(b, []))
                if m.errors.get(b):
                    runs = (runs + " " if runs else "") + f"[{len(m.errors[b])} failed]"
                mine = [t for t in m.targets if t.broker == b]  # every target of this row, "; " between
                target_txt = "; ".join(t.describe(m.unit) for t in mine)
                met_txt = "; ".join({None: "n/a", True: "yes", False: "NO"}[t.check(meds)] for t in mine)
                r = rats.get(b)
                rows.append([
                    m.benchmark if i == 0 else "",
                    m.name if i == 0 else "",
                    b,
                    _fmt(meds.get(b)),
                    m.unit,
                    runs,
                    "" if r is None else (f"{r:.2f}x" if r >= 0.1 else f"{r:.2g}x"),
                    target_txt,
                    met_txt,
                ])
        lines.append(_table(rows))
        # ratio targets are listed on the kafkalite row; say which peer they refer to
        errs = [(m, b, e) for m in self.metrics for b, es in m.errors.items() for e in es]
        if errs:
            lines.append("failures:")
            seen = set()
            for m, b, e in errs:
                key = (m.benchmark, b, e)
                if key in seen:
                    continue
                seen.add(key)
                lines.append(f"  {m.benchmark} / {b}: {e}")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "title": self.title,
            "started_unix": self.started,
            "loadavg_at_start": self.loadavg_at_start,
            "environment": environment(),
            "settings": self.settings,
            "metrics": [m.to_json() for m in self.metrics],
            "notes": self.notes,
        }

    def write_json(self, path: str | os.PathLike) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2, default=str) + "\n")


def _loadavg() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except OSError:
        return None


def environment() -> dict:
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_at_end": _loadavg(),
    }
    from bench.peers import KAFKALITE_CONFIG

    env["kafkalite_config"] = dict(KAFKALITE_CONFIG)
    try:
        import confluent_kafka

        env["confluent_kafka"] = confluent_kafka.version()[0]
        env["librdkafka"] = confluent_kafka.libversion()[0]
    except Exception:  # noqa: BLE001 - optional
        pass
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
        if rev.returncode == 0:
            env["git_commit"] = rev.stdout.strip()
    except OSError:
        pass
    try:
        from bench.peers import tansu_version

        env["tansu"] = tansu_version()
    except Exception:  # noqa: BLE001 - optional
        pass
    try:
        from bench.peers import kafka_version

        env["kafka"] = kafka_version()
    except Exception:  # noqa: BLE001 - optional
        pass
    return env


# --------------------------------------------------------------------------- CLI helpers

def alternate(brokers: Sequence[str], rounds: int) -> Iterator[tuple[int, str]]:
    """(round, broker) in the order ours, peer, ours, peer, ... so drift hits both alike."""
    for r in range(rounds):
        for b in brokers:
            yield r, b


def failure(when: str, exc: BaseException) -> str:
    """A failed round as one line for Metric.fail: when, the exception's type and first line."""
    return f"{when}: {type(exc).__name__}: {exc}".splitlines()[0]


def common_parser(doc: str, runs: int, brokers: str = "kafkalite,tansu") -> argparse.ArgumentParser:
    """A bench's argument parser: its module docstring's first paragraph as the description, and
    the options every bench has (add_common_arguments)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_common_arguments(parser, runs, brokers)
    return parser


def produce_load_parser(doc: str, prog: str, records: int, warmup_records: int,
                        runs: int = 3) -> argparse.ArgumentParser:
    """The parser of a bench that measures a produce load on kafkalite alone (no --brokers):
    --records, --value-size, --runs, --warmup-records and --json."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=records)
    parser.add_argument("--value-size", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--warmup-records", type=int, default=warmup_records)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    return parser


def add_common_arguments(parser, runs: int, brokers: str = "kafkalite,tansu") -> None:
    parser.add_argument("--brokers", default=brokers,
                        help="comma-separated: kafkalite, tansu, kafka (Apache Kafka), or NAME=HOST:PORT for a "
                             "running broker "
                             f"(default {brokers})")
    parser.add_argument("--runs", type=int, default=runs, help=f"measured runs per broker (default {runs})")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    parser.add_argument("--kafkalite-config", action="append", default=[], metavar="KEY=VALUE",
                        help="broker setting for the kafkalite started here (-c KEY=VALUE; repeatable)")


def apply_common_arguments(args) -> None:
    """Act on the options of add_common_arguments that configure the brokers."""
    from bench import peers

    for kv in args.kafkalite_config:
        key, sep, value = kv.partition("=")
        if not sep:
            raise SystemExit(f"--kafkalite-config expects KEY=VALUE, got {kv!r}")
        peers.KAFKALITE_CONFIG[key.strip()] = value.strip()


def main_with_runs(doc: str, run: Callable[[int], Report], argv: list[str] | None, runs: int) -> Report:
    """The main() of a bench whose only options are --runs and --json: parse, run(runs), print."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=runs, help=f"measured runs of each (default {runs})")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)
    report = run(args.runs)
    emit(report, args.json)
    return report


def main_with_records(doc: str, run: Callable[[list[str], int, int], Report], argv: list[str] | None,
                      records: int, records_help: str) -> Report:
    """The main() of a bench of kafkalite against Kafka whose one own option is --records: parse,
    run(brokers, runs, records), print."""
    from bench import peers

    parser = common_parser(doc, runs=3, brokers="kafkalite,kafka")
    parser.add_argument("--records", type=int, default=records, help=records_help)
    args = parser.parse_args(argv)
    apply_common_arguments(args)
    report = run(peers.parse_brokers(args.brokers), args.runs, args.records)
    emit(report, args.json)
    return report


def emit(report: Report, json_path: str | None) -> None:
    print(report.render(), flush=True)
    if json_path:
        report.write_json(json_path)
        print(f"(json written to {json_path})", flush=True)
