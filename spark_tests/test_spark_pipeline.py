"""examples/spark_pipeline.py, run as a user would run it, against the broker of the project's
pytest fixture (kafka_bootstrap); its output is read back with confluent-kafka."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from spark_tests import other_client

pytestmark = [pytest.mark.timeout(300)]

_spec = importlib.util.spec_from_file_location(
    "spark_pipeline", Path(__file__).resolve().parent.parent / "examples" / "spark_pipeline.py")
pipeline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pipeline)


def events(*purchases):
    return [(0, None, json.dumps({"user": u, "amount": a}).encode(), None) for u, a in purchases]


def latest_totals(bootstrap, topic, start=0):
    """user -> newest result record, over the results from offset `start` on."""
    out = {}
    for m in other_client.read_all(bootstrap, topic):
        if m.offset >= start:
            value = json.loads(m.value)
            assert m.key.decode() == value["user"]
            out[value["user"]] = value
    return out


@pytest.mark.exactly_once
def test_pipeline_totals_per_user_across_runs(spark, bootstrap, topic, tmp_path):
    source, sink = topic(1), topic(1)
    checkpoint = str(tmp_path / "checkpoint")
    other_client.produce(bootstrap, source, events(("ada", 10.0), ("bob", 2.5), ("ada", 4.25), ("cy", 1.0)))
    pipeline.run(spark, bootstrap, source, sink, checkpoint)
    assert latest_totals(bootstrap, sink) == {
        "ada": {"user": "ada", "purchases": 2, "total": 14.25},
        "bob": {"user": "bob", "purchases": 1, "total": 2.5},
        "cy": {"user": "cy", "purchases": 1, "total": 1.0},
    }

    written = len(other_client.read_all(bootstrap, sink))
    other_client.produce(bootstrap, source, events(("bob", 7.5), ("dee", 3.0)) + [(0, None, b"not json", None)])
    pipeline.run(spark, bootstrap, source, sink, checkpoint)  # the checkpoint keeps the totals so far
    assert latest_totals(bootstrap, sink, start=written) == {  # only what changed is written again
        "bob": {"user": "bob", "purchases": 2, "total": 10.0},
        "dee": {"user": "dee", "purchases": 1, "total": 3.0},
    }
    assert latest_totals(bootstrap, sink)["ada"] == {"user": "ada", "purchases": 2, "total": 14.25}
