#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine (Python 3.11, Java 17, Node 20):
# the package with its test extras, kcat, Chromium, the Java jar sets from Maven Central, kafkajs,
# podman and the container tests' base image.
# Idempotent: a second run only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS="${KAFKALITE_DEPS_DIR:-$PWD/.deps}"
mkdir -p "$DEPS"

# --- Python: the package and the Python clients ---
python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'

# --- Spark: PySpark for spark_tests/ and examples/spark_pipeline.py ---
# PySpark (a ~400 MB sdist, built once) at the newest version whose Kafka connector is on Maven
# Central: 4.3.0 has none, 4.2.0 has. The connector itself is the `spark-kafka` jar set below, pinned
# to the same version in scripts/maven/spark-kafka/pom.xml.
PYSPARK_VERSION=4.2.0
if [ "$(python3 -c 'import pyspark; print(pyspark.__version__)' 2>/dev/null)" != "$PYSPARK_VERSION" ]; then
    python3 -m pip install --quiet --disable-pip-version-check "pyspark==$PYSPARK_VERSION"
fi

# --- Debian: kcat (librdkafka) ---
if ! command -v kcat >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq kcat >/dev/null
fi

# --- Debian: librdkafka's header, for bench/rdkperf (built by its first use) ---
if [ ! -f /usr/include/librdkafka/rdkafka.h ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq librdkafka-dev >/dev/null
fi

# --- Debian: Chromium for the web console's browser tests ---
# Playwright (a Python test dependency) drives Debian's Chromium through executable_path; it never
# downloads a browser of its own (no `playwright install`).
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

# --- Java: jar sets from Maven Central ---
# Each set is a small pom under scripts/maven/NAME/pom.xml, resolved with its runtime dependencies
# into $DEPS/maven/NAME/ (Maven's local repository is cached in .cache/m2). A stamp with the pom's
# hash makes a second run a no-op, and offline once cached.
M2_REPO="${KAFKALITE_M2_REPO:-$PWD/.cache/m2}"
maven_jars() {
    local name="$1" pom="$PWD/scripts/maven/$1/pom.xml" out="$DEPS/maven/$1"
    local sha stamp="$DEPS/maven/$1/.pom.sha256"
    sha="$(sha256sum "$pom" | cut -d' ' -f1)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$sha" ]; then
        rm -rf "$out"
        mkdir -p "$out"
        mvn -q -B -f "$pom" -Dmaven.repo.local="$M2_REPO" dependency:copy-dependencies \
            -DoutputDirectory="$out" -DincludeScope=runtime >"$out.log" 2>&1 \
            || { cat "$out.log" >&2; echo "could not resolve the Maven jar set $name" >&2; exit 1; }
        echo "$sha" > "$stamp"
    fi
}
if ! command -v mvn >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq maven >/dev/null
fi
maven_jars java-clients
maven_jars testcontainers-java
maven_jars kafka-broker  # the reference Apache Kafka broker (compat_tests/reference.py)
maven_jars spark-kafka  # spark-sql-kafka-0-10 and spark-token-provider-kafka-0-10, passed to Spark as spark.jars
grep -q "<spark.version>$PYSPARK_VERSION</spark.version>" scripts/maven/spark-kafka/pom.xml \
    || { echo "scripts/maven/spark-kafka/pom.xml is not at PySpark $PYSPARK_VERSION" >&2; exit 1; }
maven_jars spark-avro  # spark-avro (from_avro), for the schema registry's Spark example
grep -q "<spark.version>$PYSPARK_VERSION</spark.version>" scripts/maven/spark-avro/pom.xml \
    || { echo "scripts/maven/spark-avro/pom.xml is not at PySpark $PYSPARK_VERSION" >&2; exit 1; }
maven_jars kafka-streams
maven_jars spring-kafka
maven_jars kafka-perf  # Kafka's ProducerPerformance / ConsumerPerformance for bench/perf.py
maven_jars kafka-tools  # Kafka 4.4's command-line tools for compat_tests/tools
maven_jars kafka-connect  # a Connect worker, the FileStream connectors and MirrorMaker 2 for compat_tests/connect

# --- Node: kafkajs ---
# kafkajs and its codec packages, pinned by compat_tests/node/package-lock.json, installed with
# `npm ci` into compat_tests/node/node_modules. None of them runs an install script (the zstd
# binding comes as a prebuilt platform package), so --ignore-scripts. A stamp with the lockfile's
# hash makes a second run a no-op.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
NODE_DIR="$PWD/compat_tests/node"
node_stamp="$NODE_DIR/node_modules/.kafkalite-lock.sha256"
node_lock_sha="$(sha256sum "$NODE_DIR/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$node_stamp" 2>/dev/null)" != "$node_lock_sha" ] || [ ! -f "$NODE_DIR/node_modules/kafkajs/package.json" ]; then
    (cd "$NODE_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$node_lock_sha" > "$node_stamp"
fi
node -e "require('$NODE_DIR/node_modules/kafkajs'); require('$NODE_DIR/node_modules/@mongodb-js/zstd')" \
    || { echo "kafkajs or its zstd codec does not load from $NODE_DIR/node_modules" >&2; exit 1; }

# --- Containers: podman, runc, debootstrap and the local base image for container_tests/ ---
bash scripts/container-base.sh

# --- Go: franz-go and sarama (compat_tests/go) ---
# Modules pinned by compat_tests/go/go.sum, from the Go module proxy into .cache/go/mod; the
# driver binary is built once per source hash into $DEPS/bin (compat_tests/clients/golang.py owns
# the build; a second run finds the binary and does nothing).
command -v go >/dev/null 2>&1 || { echo "go is not installed: the franz-go and sarama clients need it" >&2; exit 1; }
python3 -c 'from compat_tests.clients import golang; golang.build()' \
    || { echo "could not build the Go client driver (compat_tests/go)" >&2; exit 1; }

echo "test dependencies ready in $DEPS"
