"""examples/spark_pipeline.py, run as a user would run it (``python examples/spark_pipeline.py``, its
Spark session from kafkalite.spark.session(), the connector fetched by Spark's Ivy from Maven
Central), against the broker of the project's pytest fixture (kafka_bootstrap); its output is read
back with confluent-kafka. Spark's Ivy cache is .cache/ivy ($KAFKALITE_CACHE_DIR/ivy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_tests import other_client

pytestmark = [pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "spark_pipeline.py"
IVY = Path(os.environ.get("KAFKALITE_CACHE_DIR") or ROOT / ".cache") / "ivy"
# what the tests add to the example's Spark: loopback only, a small local master, no UI
SUBMIT_ARGS = ["--master", "local[2]", "--conf", f"spark.jars.ivy={IVY}", "--conf", "spark.ui.enabled=false",
               "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
               "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.sql.codegen.wholeStage=false",
               "--driver-java-options", "-Djava.net.preferIPv4Stack=true -XX:TieredStopAtLevel=1"]


def run_example(bootstrap: str, source: str, sink: str, checkpoint: str) -> str:
    """Runs the example once as its own process; returns what it printed (Ivy's lines and the log)."""
    env = dict(os.environ, PYSPARK_SUBMIT_ARGS=" ".join(
        a if " " not in a else f'"{a}"' for a in SUBMIT_ARGS) + " pyspark-shell", PYSPARK_PYTHON=sys.executable)
    try:
        done = subprocess.run([sys.executable, str(EXAMPLE), "--bootstrap", bootstrap, "--source", source,
                               "--sink", sink, "--checkpoint", checkpoint],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=420)
    except subprocess.TimeoutExpired as exc:
        said = (exc.stdout or b"") + (exc.stderr or b"")
        text = said.decode(errors="replace") if isinstance(said, bytes) else said
        pytest.fail(f"the example did not finish in {exc.timeout} s; its output:\n{text[-6000:]}")
    assert done.returncode == 0, f"the example failed ({done.returncode}):\n{done.stderr[-6000:]}"
    return done.stdout + done.stderr


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
def test_pipeline_totals_per_user_across_runs(bootstrap, topic, tmp_path):
    source, sink = topic(1), topic(1)
    checkpoint = str(tmp_path / "checkpoint")
    other_client.produce(bootstrap, source, events(("ada", 10.0), ("bob", 2.5), ("ada", 4.25), ("cy", 1.0)))
    log = run_example(bootstrap, source, sink, checkpoint)
    import pyspark
    import kafkalite.spark

    chosen = kafkalite.spark.connector_version(pyspark.__version__)
    assert f"found org.apache.spark#spark-sql-kafka-0-10_2.13;{chosen} in" in log  # Ivy got the helper's pick
    said = f"using {chosen}, the newest"
    assert (said in log) == (chosen != pyspark.__version__), log[-3000:]  # one line when not PySpark's own
    assert latest_totals(bootstrap, sink) == {
        "ada": {"user": "ada", "purchases": 2, "total": 14.25},
        "bob": {"user": "bob", "purchases": 1, "total": 2.5},
        "cy": {"user": "cy", "purchases": 1, "total": 1.0},
    }

    written = len(other_client.read_all(bootstrap, sink))
    other_client.produce(bootstrap, source, events(("bob", 7.5), ("dee", 3.0)) + [(0, None, b"not json", None)])
    run_example(bootstrap, source, sink, checkpoint)  # the checkpoint keeps the totals so far
    assert latest_totals(bootstrap, sink, start=written) == {  # only what changed is written again
        "bob": {"user": "bob", "purchases": 2, "total": 10.0},
        "dee": {"user": "dee", "purchases": 1, "total": 3.0},
    }
    assert latest_totals(bootstrap, sink)["ada"] == {"user": "ada", "purchases": 2, "total": 14.25}
