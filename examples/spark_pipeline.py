"""A small PySpark Structured Streaming job on Kafka (or kafkalite): it reads purchase events from
one topic, totals them per user, and writes each user's running total to another topic.

Events are JSON values, ``{"user": "ada", "amount": 12.5}``. Results are keyed by user, with JSON
values ``{"user": "ada", "purchases": 3, "total": 40.0}``; the newest record for a key is that
user's current total (the topic can be compacted). The checkpoint keeps the read offsets and the
totals, so each run carries on where the last one stopped.

    python examples/spark_pipeline.py --bootstrap 127.0.0.1:9092 --source purchases \\
        --sink totals-by-user --checkpoint /tmp/totals-checkpoint

Spark's Kafka connector is not part of PySpark: kafkalite.spark.session() fetches it from Maven
Central (spark.jars.packages) for the installed PySpark, at PySpark's own version when Maven Central
serves it, else the newest served release of the same major version (one log line says so).
"""

from __future__ import annotations

import argparse
import logging

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import kafkalite.spark

EVENT = "user STRING, amount DOUBLE"


def totals(events: DataFrame) -> DataFrame:
    """Kafka records with JSON purchase events -> Kafka records (key, value) with running totals."""
    purchases = events.select(F.from_json(F.col("value").cast("string"), EVENT).alias("e")).select("e.*")
    per_user = purchases.where(F.col("user").isNotNull()).groupBy("user").agg(
        F.count("*").alias("purchases"), F.round(F.sum("amount"), 2).alias("total"))
    return per_user.select(F.col("user").alias("key"), F.to_json(F.struct("user", "purchases", "total")).alias("value"))


def run(spark: SparkSession, bootstrap: str, source: str, sink: str, checkpoint: str) -> None:
    """Processes every event available now, writes the updated totals, and returns."""
    events = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source)
              .option("startingOffsets", "earliest")
              .load())
    query = (totals(events).writeStream.format("kafka")
             .option("kafka.bootstrap.servers", bootstrap)
             .option("topic", sink)
             .option("checkpointLocation", checkpoint)
             .outputMode("update")          # only the totals that changed in this micro-batch
             .trigger(availableNow=True)    # run as a batch job over the new events, then stop
             .start())
    query.awaitTermination()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--source", default="purchases")
    parser.add_argument("--sink", default="totals-by-user")
    parser.add_argument("--checkpoint", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    spark = kafkalite.spark.session(app_name="spark-pipeline")
    try:
        run(spark, args.bootstrap, args.source, args.sink, args.checkpoint)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
