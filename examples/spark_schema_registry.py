"""A PySpark batch job on Avro records in Confluent's wire format, with the schema registry that
kafkalite serves (or any Confluent-compatible one): it reads purchase events that confluent-kafka's
AvroSerializer wrote (magic byte 0, a 4-byte schema id, the Avro body), decodes them with
`from_avro` using the writer's schema fetched from the registry, totals them per user, and writes
the totals back in the same wire format, under a schema it registers for the sink's subject,
so that confluent-kafka's AvroDeserializer (or any Confluent deserializer) reads them.

Events: `{"user": "ada", "amount": 12.5}` (subject `<source>-value`). Totals: key = user, value
`{"user": "ada", "purchases": 3, "total": 40.0}` (subject `<sink>-value`, schema TOTAL below).

    python examples/spark_schema_registry.py --bootstrap 127.0.0.1:9092 \\
        --registry http://127.0.0.1:8081/ --source purchases --sink totals

Open-source Spark has no registry option for `from_avro`: the 5-byte prefix is cut off with
`substring(value, 6, ...)` and the schema is given as text. This reads every record with the
subject's latest schema; a topic whose records carry several schema ids needs one `from_avro`
per id (filter on the id first). Spark's Kafka and Avro connectors are not part of PySpark: the
session below fetches them from Maven Central (spark.jars.packages) at the installed PySpark's version.
"""

from __future__ import annotations

import argparse
import json
import urllib.request

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro, to_avro

TOTAL = json.dumps({"type": "record", "name": "Total", "namespace": "example", "fields": [
    {"name": "user", "type": ["null", "string"], "default": None},
    {"name": "purchases", "type": ["null", "long"], "default": None},
    {"name": "total", "type": ["null", "double"], "default": None}]})
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def registry_call(registry: str, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(registry.rstrip("/") + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def confluent_prefix(schema_id: int) -> bytes:
    """Confluent's wire-format header: magic byte 0, then the schema id as a big-endian int32."""
    return b"\x00" + schema_id.to_bytes(4, "big")


def totals(records: DataFrame, writer_schema: str, total_schema_id: int) -> DataFrame:
    """Kafka records holding framed Avro purchases -> Kafka records (key, value) of framed Avro totals."""
    body = F.expr("substring(value, 6, length(value) - 5)")  # after the magic byte and the schema id
    purchases = records.select(from_avro(body, writer_schema).alias("e")).select("e.*")
    per_user = purchases.where(F.col("user").isNotNull()).groupBy("user").agg(
        F.count("*").alias("purchases"), F.round(F.sum("amount"), 2).alias("total"))
    value = F.concat(F.lit(confluent_prefix(total_schema_id)), to_avro(F.struct("user", "purchases", "total"), TOTAL))
    return per_user.select(F.col("user").cast("binary").alias("key"), value.alias("value"))


def run(spark: SparkSession, bootstrap: str, registry: str, source: str, sink: str) -> int:
    """Reads every record of `source` now there, writes the totals to `sink`; returns how many totals."""
    writer_schema = registry_call(registry, "GET", f"/subjects/{source}-value/versions/latest")["schema"]
    total_id = registry_call(registry, "POST", f"/subjects/{sink}-value/versions", {"schema": TOTAL})["id"]
    records = (spark.read.format("kafka")
               .option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", source)
               .option("startingOffsets", "earliest")
               .option("endingOffsets", "latest")
               .load())
    out = totals(records, writer_schema, total_id).cache()
    (out.write.format("kafka")
     .option("kafka.bootstrap.servers", bootstrap)
     .option("topic", sink)
     .save())
    return out.count()


def session() -> SparkSession:
    # Spark's Kafka connector and Avro data source for the installed PySpark, at the version
    # kafkalite.spark picks (PySpark's own when Maven Central serves it, else the newest of its major)
    from kafkalite.spark import connector_version, packages, scala_version

    avro = f"org.apache.spark:spark-avro_{scala_version()}:{connector_version()}"
    return (SparkSession.builder.appName("spark-schema-registry")
            .config("spark.jars.packages", f"{packages()},{avro}")
            .getOrCreate())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--registry", default="http://127.0.0.1:8081/")
    parser.add_argument("--source", default="purchases")
    parser.add_argument("--sink", default="totals")
    args = parser.parse_args()
    spark = session()
    try:
        print(f"{run(spark, args.bootstrap, args.registry, args.source, args.sink)} totals written to {args.sink}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
