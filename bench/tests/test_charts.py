"""bench.charts draws the medians the benchmarks' JSON holds, a line a broker, and leaves out what
a broker did not measure."""

from __future__ import annotations

import json

from PIL import Image

from bench import charts
from bench.stats import Report


def _scale_report(values: dict[tuple[str, str, int], list[float]]) -> dict:
    report = Report("scale")
    for (kind, broker, n), runs in values.items():
        name = {"create": f"create {n} partitions", "rss": f"RSS after restart, {n}"}[kind]
        metric = next((m for m in report.metrics if m.name == name), None) or report.metric(
            "scale", name, "s" if kind == "create" else "MB", False)
        for v in runs:
            metric.add(broker, v)
    report.metric("scale", "create 100 partitions", "s", False).fail("kafka", "refused")
    return report.to_json()


def _lines(ax) -> dict[str, tuple[list, list]]:
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()}


def test_the_scale_picture_draws_each_brokers_medians_by_partition_count():
    first = _scale_report({("create", "kafkalite", 1): [0.02, 0.01, 0.03], ("create", "kafka", 1): [0.3],
                           ("create", "kafkalite", 10000): [0.5, 0.4, 0.9], ("create", "kafka", 10000): [80.0],
                           ("rss", "kafkalite", 10000): [50.0]})
    # a second file fills the sizes the first lacks (a kafkalite-only run at 50 000), never replaces
    second = _scale_report({("create", "kafkalite", 50000): [2.5], ("create", "kafkalite", 1): [9.0]})
    fig = charts.scale_figure([first, second])
    create, stop, _restart, rss = fig.axes
    assert _lines(create) == {"kafka": ([1, 10000], [0.3, 80.0]),
                              "kafkalite": ([1, 10000, 50000], [0.02, 0.5, 2.5])}
    assert _lines(stop) == {}                       # not measured: no line, not a line at zero
    assert _lines(rss) == {"kafkalite": ([10000], [50.0])}
    assert create.get_xscale() == "log" and create.get_title() == "create"


def test_the_idle_connections_picture_reads_the_rows_of_each_count():
    report = Report("idle")
    p99 = report.metric("idle_connections", "produce p99", "ms", False)
    for broker, count, v in (("kafkalite", 10, 18.5), ("kafkalite", 5000, 18.4), ("kafka", 10, 54.2)):
        p99.add(f"{broker}, {count} idle", v)
    fig = charts.idle_figure(report.to_json())
    assert _lines(fig.axes[1]) == {"kafka": ([10], [54.2]), "kafkalite": ([10, 5000], [18.5, 18.4])}
    assert _lines(fig.axes[0]) == {}


def test_main_writes_one_png_a_picture(tmp_path):
    scale = tmp_path / "scale.json"
    scale.write_text(json.dumps(_scale_report({("create", "kafkalite", 1): [0.1], ("create", "kafkalite", 100): [0.2]})))
    soak = tmp_path / "soak.json"
    soak.write_text(json.dumps({"minutes": 2, "settle_min": 1, "errors": {"produce": ["timed out"]},
                                "samples": [{"minute": m, "rss_mib": 40 + m, "open_files": 6} for m in (0, 1, 2)]}))
    written = charts.main(["--scale", str(scale), "--soak", str(soak), "--out", str(tmp_path / "out")])
    assert [p.name for p in written] == ["scale.png", "soak.png"]
    for path in written:
        with Image.open(path) as image:
            assert image.format == "PNG" and image.size[0] == 800
    fig = charts.soak_figure(json.loads(soak.read_text()))
    assert _lines(fig.axes[0])["kafkalite"] == ([0, 1, 2], [40, 41, 42])
    assert "1 errors" in fig.get_suptitle()
