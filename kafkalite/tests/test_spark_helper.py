"""kafkalite.spark: which Kafka connector a PySpark gets (the Spark sessions themselves run in
spark_tests/, on two PySpark versions)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from kafkalite import spark

SERVED = ["3.5.9", "4.0.0", "4.0.0-preview1", "4.0.1", "4.1.0", "4.1.0-preview4", "4.2.0", "4.2.0-preview5"]


def test_pyspark_s_own_version_when_served():
    assert spark.pick("4.0.1", SERVED) == "4.0.1"
    assert spark.pick("3.5.9", SERVED) == "3.5.9"


def test_the_newest_served_release_of_the_same_major_otherwise():
    assert spark.pick("4.3.0", SERVED) == "4.2.0"  # never a preview
    assert spark.pick("4.0.5", SERVED) == "4.2.0"
    assert spark.pick("3.5.10", SERVED) == "3.5.9"


def test_no_release_of_that_major_is_an_error_naming_it():
    with pytest.raises(ValueError, match="Spark 5.x"):
        spark.pick("5.0.0", SERVED)


def test_one_log_line_when_the_connector_is_not_pyspark_s_own(caplog):
    with caplog.at_level(logging.INFO, logger="kafkalite.spark"):
        assert spark.connector_version("4.2.0", served=SERVED) == "4.2.0"
        assert caplog.records == []
        assert spark.connector_version("4.3.0", served=SERVED) == "4.2.0"
    [record] = caplog.records
    assert "no org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0; using 4.2.0" in record.getMessage()


@pytest.mark.timeout(60)
def test_maven_central_serves_the_connectors_the_tests_use():
    """The real repository: PySpark 4.0.0's connector (the oldest 4.x the Spark tests run on) is
    served, and what the helper prints for a PySpark is a version Maven Central has."""
    served = spark.served_versions("spark-sql-kafka-0-10_2.13")
    assert "4.0.0" in served
    out = subprocess.run([sys.executable, "-m", "kafkalite.spark", "--pyspark-version", "4.0.0"],
                         capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    assert out == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0"
    newest = subprocess.run([sys.executable, "-m", "kafkalite.spark", "--connector-version",
                             "--pyspark-version", "4.99.0"], capture_output=True, text=True, timeout=60,
                            check=True).stdout.strip()
    assert newest in served and newest.startswith("4.")
