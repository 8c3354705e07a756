"""Spark's Kafka connector for the PySpark you have: ``kafkalite.spark.session()``.

PySpark ships Spark but not its Kafka connector (``org.apache.spark:spark-sql-kafka-0-10_SCALA``),
which Spark fetches from Maven Central when ``spark.jars.packages`` names it. Maven Central does
not serve every PySpark release's connector (PySpark 4.3.0's is not there; 4.2.0's is), and a
package Ivy cannot find ends the Spark start in ``JAVA_GATEWAY_EXITED``. So:

- the connector's version is the running PySpark's when Maven Central serves it, otherwise the
  newest served release of the same major version (the connector speaks to Spark through its
  stable data source API; a newer or older minor release of the same major works), said in one
  log line;
- the Scala version is the one PySpark's own jars are built for (``scala-library-2.13.*.jar``).

    from kafkalite.spark import session
    spark = session(app_name="my-job")             # a SparkSession with the connector
    spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)...

    # or only the value, for a builder of your own
    SparkSession.builder.config("spark.jars.packages", kafkalite.spark.packages())

``python -m kafkalite.spark`` prints the ``spark.jars.packages`` value (``--connector-version``:
only the version). The served versions are read from Maven Central's ``maven-metadata.xml``
(``KAFKALITE_MAVEN_REPOSITORY`` names another repository with Maven Central's layout).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import urllib.request
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable
from xml.etree import ElementTree

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["connector_version", "packages", "session", "served_versions"]

log = logging.getLogger("kafkalite.spark")

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
GROUP = "org.apache.spark"
CONNECTOR = "spark-sql-kafka-0-10"
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")  # not previews or release candidates


def _release(version: str) -> tuple[int, int, int] | None:
    m = _RELEASE.match(version)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def scala_version() -> str:
    """The Scala binary version PySpark's jars are built for ("2.13"); "2.13" when it cannot be told
    (the default of every Spark 4 release)."""
    try:
        import pyspark
    except ImportError:
        return "2.13"
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    for jar in jars.glob("scala-library-*.jar"):
        m = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        if m:
            return m.group(1)
    return "2.13"


@lru_cache(maxsize=None)
def served_versions(artifact: str, repository: str | None = None, timeout: float = 20.0) -> tuple[str, ...]:
    """The versions of org.apache.spark:ARTIFACT the repository serves (its maven-metadata.xml)."""
    repo = (repository or os.environ.get("KAFKALITE_MAVEN_REPOSITORY") or MAVEN_CENTRAL).rstrip("/")
    url = f"{repo}/{GROUP.replace('.', '/')}/{artifact}/maven-metadata.xml"
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a fixed https URL
        root = ElementTree.fromstring(response.read())
    return tuple(v.text.strip() for v in root.iter("version") if v.text)


def pick(version: str, served: Iterable[str]) -> str:
    """`version` if served, else the newest served release of its major version; ValueError when
    that major version has none."""
    served = list(served)
    if version in served:
        return version
    wanted = _release(version)
    major = wanted[0] if wanted else int(version.split(".", 1)[0])
    same_major = [(r, v) for v in served if (r := _release(v)) is not None and r[0] == major]
    if not same_major:
        raise ValueError(f"Maven Central serves no {CONNECTOR} release for Spark {major}.x "
                         f"(PySpark {version}); served: {', '.join(served) or 'none'}")
    return max(same_major)[1]


def connector_version(version: str | None = None, served: Iterable[str] | None = None) -> str:
    """The connector's version for PySpark `version` (default: the installed one), logging one line
    when it is not PySpark's own."""
    version = version or pyspark_version()
    artifact = f"{CONNECTOR}_{scala_version()}"
    chosen = pick(version, served_versions(artifact) if served is None else served)
    if chosen != version:
        log.warning("Maven Central has no %s:%s:%s; using %s, the newest %s.x release it serves",
                    GROUP, artifact, version, chosen, chosen.split(".", 1)[0])
    return chosen


def packages(version: str | None = None) -> str:
    """The ``spark.jars.packages`` value that brings the connector for PySpark `version`."""
    return f"{GROUP}:{CONNECTOR}_{scala_version()}:{connector_version(version)}"


def session(app_name: str = "kafkalite", master: str | None = None, **config: Any) -> "SparkSession":
    """A SparkSession (getOrCreate) with Spark's Kafka connector for the installed PySpark;
    `config` adds settings (``session(**{"spark.sql.shuffle.partitions": "2"})``)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).config("spark.jars.packages", packages())
    if master is not None:
        builder = builder.master(master)
    for key, value in config.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalite.spark",
                                     description="Print the spark.jars.packages value for the installed PySpark.")
    parser.add_argument("--connector-version", action="store_true", help="print only the connector's version")
    parser.add_argument("--pyspark-version", default=None, help="for this PySpark version instead of the installed one")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    if args.connector_version:
        print(connector_version(args.pyspark_version))
    else:
        print(packages(args.pyspark_version))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
