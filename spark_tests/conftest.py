"""PySpark with Spark's own Kafka connector against the broker under test.

The broker is the kafkalite pytest plugin's (``kafka_bootstrap``): kafkalite started for the
session, or the broker named by KAFKA_BOOTSTRAP / --kafka-bootstrap; with ``COMPAT_BROKER=kafka``
(``--broker=kafka``, compat_tests/brokers.py) Apache Kafka started for the session instead.

One Spark session serves every test (local[2], two shuffle partitions, no UI). The tests run on
whichever PySpark is installed (scripts/test.sh: the newest pip picks, and the oldest 4.x whose
connector Maven Central serves). Spark's jars come with PySpark; the connector (spark-sql-kafka-0-10
and spark-token-provider-kafka-0-10 with kafka-clients and commons-pool2) is only on Maven Central,
at the version kafkalite.spark picks for this PySpark (its own when served, else the newest served
of its major version). scripts/install-test-deps.sh resolves it into .deps/maven/spark-kafka-VERSION
(.deps is $KAFKALITE_DEPS_DIR when set), and the session gets those jars as ``spark.jars``: several
sessions resolving through Ivy at once would share one Ivy cache. ``SPARK_KAFKA_JARS``
(colon-separated jar paths) overrides that set. Without the jars every test fails with that reason.
The example pipeline's test runs examples/spark_pipeline.py as a user does, through
``kafkalite.spark.session()`` and Ivy.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:  # compat_tests and examples are imported from the checkout
    sys.path.insert(0, str(_ROOT))

# where scripts/install-test-deps.sh puts the jar sets (KAFKALITE_DEPS_DIR moves .deps)
JAR_SETS = Path(os.environ.get("KAFKALITE_DEPS_DIR") or _ROOT / ".deps") / "maven"
CONNECTOR = "spark-sql-kafka-0-10_2.13"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: PySpark with Spark's Kafka connector")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.spark)


def connector_jars(spark_version: str) -> list[Path]:
    """The connector's jars for this PySpark; raises RuntimeError saying what is missing."""
    from kafkalite.spark import connector_version

    version = connector_version(spark_version)
    override = [p for p in os.environ.get("SPARK_KAFKA_JARS", "").split(":") if p.strip()]
    if override:
        jars = [Path(p).resolve() for p in override]
        missing = [str(p) for p in jars if not p.is_file()]
        if missing:
            raise RuntimeError(f"SPARK_KAFKA_JARS names files that do not exist: {missing}")
        where = "SPARK_KAFKA_JARS"
    else:
        jar_set = JAR_SETS / f"spark-kafka-{version}"
        jars = sorted(jar_set.glob("*.jar"))
        where = str(jar_set)
    if not any(p.name.startswith(CONNECTOR) for p in jars):
        raise RuntimeError(f"Spark's Kafka connector ({CONNECTOR}) is not in {where}: run "
                           f"scripts/install-test-deps.sh (the spark-kafka jar set), or set SPARK_KAFKA_JARS")
    wanted = f"{CONNECTOR}-{version}.jar"
    if not any(p.name == wanted for p in jars):
        raise RuntimeError(f"{where} has no {wanted}: the connector kafkalite.spark picks for PySpark {spark_version}")
    return jars


@pytest.fixture(scope="package")
def spark(tmp_path_factory):
    """The Spark session shared by every test, with the connector on its classpath. A package
    fixture: the files using it run together on one worker (kafkalite/tests/shared_sessions.py),
    and the driver JVM is stopped after them rather than idling to the worker's last file."""
    import pyspark
    from pyspark.sql import SparkSession

    try:
        jars = connector_jars(pyspark.__version__)
        # spark-avro (from_avro) for the schema registry's example, at the connector's version; its
        # test fails without it
        from kafkalite.spark import connector_version

        avro = connector_version(pyspark.__version__)
        jars += sorted((JAR_SETS / f"spark-avro-{avro}").glob(f"spark-avro_2.13-{avro}.jar"))
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").appName("kafkalite-spark-tests")
               .config("spark.jars", ",".join(map(str, jars)))
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               # the C1 compiler only: these short jobs finish before C2 would pay off, and 2 shared cores
               .config("spark.driver.extraJavaOptions", "-Djava.net.preferIPv4Stack=true -XX:TieredStopAtLevel=1")
               # tiny data: interpreting expressions beats compiling code for every new query shape
               .config("spark.sql.codegen.wholeStage", "false")
               .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
               .config("spark.local.dir", str(tmp_path_factory.mktemp("spark-local")))
               .getOrCreate())
    session.sparkContext.setLogLevel("WARN")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(pytestconfig: pytest.Config, request: pytest.FixtureRequest) -> str:
    """The plugin's broker, or Apache Kafka when the suite runs on it."""
    from compat_tests import brokers
    from kafkalite.pytest_plugin import external_bootstrap

    external = external_bootstrap(pytestconfig)
    if external:
        return external
    if not brokers.on_kafka():
        return request.getfixturevalue("kafkalite_broker").bootstrap
    kafka = brokers.start()
    request.addfinalizer(kafka.close)
    return kafka.bootstrap


@pytest.fixture
def bootstrap(kafka_bootstrap: str) -> str:
    return kafka_bootstrap


@pytest.fixture
def topic(kafka_topic_factory):
    """topic(partitions=1, configs=None, name=None) -> name of a fresh topic (deleted after the test)."""
    return lambda partitions=1, configs=None, name=None: kafka_topic_factory(partitions, configs, name)
