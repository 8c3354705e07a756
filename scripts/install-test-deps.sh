#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine (Python 3.11, Java 17, Node 20):
# a fresh .venv with the package, every extra and PySpark; the oldest PySpark 4 the Spark tests
# also run on; kcat, Chromium, the Java jar sets from Maven Central, kafkajs, podman and the
# container tests' base image.
# Idempotent: the venv is made anew (from pip's cache) only when pyproject.toml changed, and a
# second run only checks what else is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS="${KAFKALITE_DEPS_DIR:-$PWD/.deps}"
mkdir -p "$DEPS"

# --- Debian: what comes from the system's package manager, first and one at a time ---
# kcat (librdkafka) ---
if ! command -v kcat >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq kcat >/dev/null
fi

# librdkafka's header, for bench/rdkperf (built by its first use) ---
if [ ! -f /usr/include/librdkafka/rdkafka.h ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq librdkafka-dev >/dev/null
fi

# Chromium for the web console's browser tests ---
# Playwright (a Python test dependency) drives Debian's Chromium through executable_path; it never
# downloads a browser of its own (no `playwright install`).
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

if ! command -v mvn >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq maven >/dev/null
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
# qemu-user: the bundle tests run a bundle built for aarch64 on Debian's arm64 python3 ---
if ! command -v qemu-aarch64 >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq qemu-user >/dev/null
fi
command -v go >/dev/null 2>&1 || { echo "go is not installed: the franz-go and sarama clients need it" >&2; exit 1; }

# --- Steps in parallel ---
# The rest are independent downloads and builds (pip, Maven Central, npm, Debian's mirror for the
# container base image, the Go module proxy) that mostly wait on the network, so they run at
# once, each in the background with its output in $DEPS/install-logs/NAME.log, shown when it ends
# with its time; a step that fails fails the script after the others end. Two steps that
# write the same place never run together: the Maven sets one after the other (one local
# repository), and the Spark connectors, which need the venv's PySpark, after both.
STEP_LOGS="$DEPS/install-logs"
mkdir -p "$STEP_LOGS"
step_names=()
step_pids=()
# `start_step NAME COMMAND...` runs COMMAND in the background, its output in $STEP_LOGS/NAME.log
start_step() {
    local name="$1"
    shift
    ( step_start=$SECONDS; "$@"; echo "($name: $(( SECONDS - step_start )) s)" ) >"$STEP_LOGS/$name.log" 2>&1 &
    step_names+=("$name")
    step_pids+=("$!")
}
# `finish_steps` waits for every started step, shows its output, and exits 1 if any failed
finish_steps() {
    local i failed=0
    for i in "${!step_pids[@]}"; do
        if wait "${step_pids[$i]}"; then
            cat "$STEP_LOGS/${step_names[$i]}.log"
        else
            cat "$STEP_LOGS/${step_names[$i]}.log" >&2
            echo "installing the test dependencies: the step ${step_names[$i]} failed" >&2
            failed=1
        fi
    done
    step_names=()
    step_pids=()
    [ "$failed" = 0 ] || exit 1
}

# --- Python: a fresh virtual environment with the package, its extras and PySpark ---
# .venv (ignored by git) is a plain `python3 -m venv`, which does not see the system's
# site-packages, so what the tests import is what `pip install '.[...]'` picked for a user (the
# newest versions pyproject.toml allows), never a pin left on the machine. It is made anew when
# pyproject.toml or the install line changed since it was made (a stamp of their hash in the venv,
# .kafkalite-install.sha256; CI's clean clone has no venv and always makes one), or with
# KAFKALITE_FRESH_VENV=1 (to pick up releases since); KAFKALITE_REUSE_VENV=1 keeps any existing
# .venv whatever its stamp (for running a few tests again). pip's and uv's
# caches (downloads, and the wheel pip builds once from PySpark's ~430 MB sdist) stay where they
# keep them for this user, so that another clone on the machine (a CI run's) does not download and
# build PySpark again; with KAFKALITE_CACHE_DIR they live in that folder instead.
CACHE="${KAFKALITE_CACHE_DIR:-$PWD/.cache}"
VENV="${KAFKALITE_VENV:-$PWD/.venv}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
if [ -n "${KAFKALITE_CACHE_DIR:-}" ]; then export PIP_CACHE_DIR="$CACHE/pip" UV_CACHE_DIR="$CACHE/uv"; fi
# every extra, PySpark (spark_tests/, examples/spark_pipeline.py) and uv (the lowest-versions job
# of scripts/test.sh); editable, so the tests and the brokers they start run this checkout
VENV_INSTALL=(-e '.[test,console,tls,compression,testcontainers]' pyspark uv)
venv_stamp="$VENV/.kafkalite-install.sha256"
venv_sha="$( (cat pyproject.toml; echo "${VENV_INSTALL[*]}") | sha256sum | cut -d' ' -f1)"
# --- Spark: the oldest PySpark 4 whose Kafka connector Maven Central serves ---
# spark_tests run on the venv's PySpark (the newest pip picks) and, a few of them, once more on
# this one (scripts/test.sh), installed beside the venv into a folder put first on PYTHONPATH.
SPARK_OLDEST=4.0.0
SPARK_OLDEST_DIR="$CACHE/pyspark-$SPARK_OLDEST"
python_env() {
    if [ ! -x "$VENV/bin/python" ] || { [ "${KAFKALITE_REUSE_VENV:-}" != 1 ] \
            && { [ "${KAFKALITE_FRESH_VENV:-}" = 1 ] || [ "$(cat "$venv_stamp" 2>/dev/null)" != "$venv_sha" ]; }; }; then
        rm -rf "$VENV"
        python3 -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet "${VENV_INSTALL[@]}"
        echo "$venv_sha" > "$venv_stamp"
    else
        echo "reusing $VENV (pyproject.toml unchanged since it was made; KAFKALITE_FRESH_VENV=1 makes it anew)"
    fi
    "$VENV/bin/python" -c 'from importlib.metadata import version
print("python packages:", ", ".join(f"{n} {version(n)}" for n in
      ("trio", "anyio", "starlette", "hypercorn", "confluent-kafka", "pyspark")))'

    if [ ! -f "$SPARK_OLDEST_DIR/pyspark/version.py" ]; then
        rm -rf "$SPARK_OLDEST_DIR"
        "$VENV/bin/python" -m pip install --quiet --target "$SPARK_OLDEST_DIR" "pyspark==$SPARK_OLDEST"
    fi
}

# --- Java: jar sets from Maven Central ---
# Each set is a small pom under scripts/maven/NAME/pom.xml, resolved with its runtime dependencies
# into $DEPS/maven/NAME/ (Maven's local repository is cached in .cache/m2). A stamp with the pom's
# hash makes a second run a no-op, and offline once cached.
M2_REPO="${KAFKALITE_M2_REPO:-$CACHE/m2}"
# `maven_jars NAME VERSION` resolves a pom whose artifacts' version is the property ${jars.version}
# (spark-kafka) into $DEPS/maven/NAME-VERSION.
maven_jars() {
    local name="$1" pom="$PWD/scripts/maven/$1/pom.xml" out="$DEPS/maven/$1" version="${2:-}"
    local sha props=()
    if [ -n "$version" ]; then out="$out-$version"; props=("-Djars.version=$version"); fi
    local stamp="$out/.pom.sha256"
    sha="$(sha256sum "$pom" | cut -d' ' -f1)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$sha" ]; then
        rm -rf "$out"
        mkdir -p "$out"
        mvn -q -B -f "$pom" -Dmaven.repo.local="$M2_REPO" "${props[@]}" dependency:copy-dependencies \
            -DoutputDirectory="$out" -DincludeScope=runtime >"$out.log" 2>&1 \
            || { cat "$out.log" >&2; echo "could not resolve the Maven jar set $name" >&2; exit 1; }
        echo "$sha" > "$stamp"
    fi
}
# `maven_jar_sets NAME...` resolves the sets whose stamp is out of date as maven_jars does, in one
# Maven run: each set's pom is a module of an aggregator made in a scratch folder. A Maven run's own
# start (its JVM, its plugins) cost about 3.5 CPU-seconds of the 4 a set took alone; nine sets take
# 7.6 together (offline, `mvn -o`, the local repository filled).
maven_jar_sets() {
    local name work modules="" stale=()
    for name in "$@"; do
        if [ "$(cat "$DEPS/maven/$name/.pom.sha256" 2>/dev/null)" != "$(sha256sum "scripts/maven/$name/pom.xml" | cut -d' ' -f1)" ]; then
            stale+=("$name")
        fi
    done
    [ "${#stale[@]}" -gt 0 ] || return 0
    work="$(mktemp -d)"
    mkdir -p "$DEPS/maven"
    for name in "${stale[@]}"; do
        mkdir -p "$work/$name"
        cp "scripts/maven/$name/pom.xml" "$work/$name/pom.xml"
        modules+="<module>$name</module>"
    done
    cat > "$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>kafkalite.deps</groupId><artifactId>jar-sets</artifactId><version>1</version>
  <packaging>pom</packaging><modules>$modules</modules></project>
POM
    mvn -q -B -f "$work/pom.xml" -Dmaven.repo.local="$M2_REPO" dependency:copy-dependencies -DincludeScope=runtime \
        >"$DEPS/maven/jar-sets.log" 2>&1 \
        || { cat "$DEPS/maven/jar-sets.log" >&2; echo "could not resolve the Maven jar sets ${stale[*]}" >&2; rm -rf "$work"; exit 1; }
    for name in "${stale[@]}"; do
        rm -rf "$DEPS/maven/$name"
        mkdir -p "$DEPS/maven/$name"
        # a set of no runtime dependency has no folder to move
        if [ -d "$work/$name/target/dependency" ]; then mv "$work/$name/target/dependency/"* "$DEPS/maven/$name/"; fi
        sha256sum "scripts/maven/$name/pom.xml" | cut -d' ' -f1 > "$DEPS/maven/$name/.pom.sha256"
    done
    rm -rf "$work"
}
java_jar_sets() {
    # java-example: docs/java.md's kafka-clients and JUnit 5 for examples/java (kafkalite/tests/test_java_example.py);
    # kafka-broker: the reference Apache Kafka broker (compat_tests/reference.py); kafka-perf: Kafka's
    # ProducerPerformance / ConsumerPerformance for bench/perf.py; kafka-tools: Kafka 4.4's command-line
    # tools for compat_tests/tools; kafka-connect: a Connect worker, the FileStream connectors and
    # MirrorMaker 2 for compat_tests/connect
    maven_jar_sets java-clients java-example testcontainers-java kafka-broker kafka-streams spring-kafka kafka-perf \
        kafka-tools kafka-connect
    # the JUnit 5 extension's module (java/kafkalite-junit5): its dependencies and build plugins into the
    # local repository, so that its `mvn install` in the suite needs no download (a stamp of the pom's hash)
    junit5_sha="$(sha256sum java/kafkalite-junit5/pom.xml | cut -d' ' -f1)"
    if [ "$(cat "$DEPS/maven/kafkalite-junit5.sha256" 2>/dev/null)" != "$junit5_sha" ]; then
        mvn -q -B -f java/kafkalite-junit5/pom.xml -Dmaven.repo.local="$M2_REPO" dependency:go-offline \
            >"$DEPS/maven/kafkalite-junit5.log" 2>&1 \
            || { cat "$DEPS/maven/kafkalite-junit5.log" >&2; echo "could not resolve java/kafkalite-junit5's dependencies" >&2; exit 1; }
        echo "$junit5_sha" > "$DEPS/maven/kafkalite-junit5.sha256"
    fi
    # examples/delivery/java (Spring Boot, Jackson, the extension): its dependencies and plugins, so
    # that the suite's offline `mvn -o test` of it finds them; the extension it names is installed
    # first (without its tests, which the suite runs), as the example's resolution needs it
    delivery_sha="$(cat java/kafkalite-junit5/pom.xml examples/delivery/java/pom.xml | sha256sum | cut -d' ' -f1)"
    if [ "$(cat "$DEPS/maven/delivery-java.sha256" 2>/dev/null)" != "$delivery_sha" ]; then
        { mvn -q -B -f java/kafkalite-junit5/pom.xml -Dmaven.repo.local="$M2_REPO" -DskipTests install \
            && mvn -q -B -f examples/delivery/java/pom.xml -Dmaven.repo.local="$M2_REPO" dependency:go-offline; } \
            >"$DEPS/maven/delivery-java.log" 2>&1 \
            || { cat "$DEPS/maven/delivery-java.log" >&2; echo "could not resolve examples/delivery/java's dependencies" >&2; exit 1; }
        echo "$delivery_sha" > "$DEPS/maven/delivery-java.sha256"
    fi
}

# --- Node: kafkajs ---
# kafkajs and its codec packages, pinned by compat_tests/node/package-lock.json, installed with
# `npm ci` into compat_tests/node/node_modules. None of them runs an install script (the zstd
# binding comes as a prebuilt platform package), so --ignore-scripts. A stamp with the lockfile's
# hash makes a second run a no-op.
NODE_DIR="$PWD/compat_tests/node"
node_packages() {
    node_stamp="$NODE_DIR/node_modules/.kafkalite-lock.sha256"
    node_lock_sha="$(sha256sum "$NODE_DIR/package-lock.json" | cut -d' ' -f1)"
    if [ "$(cat "$node_stamp" 2>/dev/null)" != "$node_lock_sha" ] || [ ! -f "$NODE_DIR/node_modules/kafkajs/package.json" ]; then
        (cd "$NODE_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
        echo "$node_lock_sha" > "$node_stamp"
    fi
    node -e "require('$NODE_DIR/node_modules/kafkajs'); require('$NODE_DIR/node_modules/@mongodb-js/zstd')" \
        || { echo "kafkajs or its zstd codec does not load from $NODE_DIR/node_modules" >&2; exit 1; }
}

# --- Containers: podman, runc, debootstrap and the local base image for container_tests/ ---
# (scripts/container-base.sh, a step of its own below)

# --- Go: franz-go and sarama (compat_tests/go), and the kafkalitetest helper's modules ---
# Modules pinned by compat_tests/go/go.sum and go/kafkalitetest/go.sum, from the Go module proxy
# into the checkout's .cache/go/mod, and built into .cache/go/build, the build cache and settings the tests use
# (compat_tests/clients/golang.py's go_env): kafkalite/tests/test_language_helpers.py then vets and
# tests go/kafkalitetest without compiling franz-go and sarama (over a minute of the pass's CPU
# otherwise), and the driver's packages compiled there too, so that the driver's build after the
# steps (compat_tests/clients/golang.py owns it, run from the venv; once per source hash into
# $DEPS/bin, a second run finds the binary and does nothing) only links.
go_modules() {
    local go_cache="$PWD/.cache/go"
    (export GOMODCACHE="$go_cache/mod" GOCACHE="$go_cache/build" GOPATH="$go_cache" \
            GOFLAGS="-modcacherw -mod=readonly" CGO_ENABLED=0 \
        && cd go/kafkalitetest && go mod download && go vet ./... && go test -count=1 -run '^$' ./... >/dev/null \
        && cd ../../compat_tests/go && go mod download && go build -o /dev/null .) \
        || { echo "could not download and build the Go modules (go/kafkalitetest, compat_tests/go)" >&2; exit 1; }
}
# --- Other Pythons: Debian's own, unpacked (not installed) for kafkalite/tests/test_bundle.py ---
# arm64 bookworm's 3.11 (run under qemu-aarch64) and amd64 trixie's 3.13, from Debian's archive
other_pythons() {
    python3 scripts/debian_python.py arm64 bookworm "$DEPS/python-arm64-bookworm" \
        && python3 scripts/debian_python.py amd64 trixie "$DEPS/python-amd64-trixie"
}
go_driver() {
    "$VENV/bin/python" -c 'from compat_tests.clients import golang; golang.build()' \
        || { echo "could not build the Go client driver (compat_tests/go)" >&2; exit 1; }
}

start_step python python_env
start_step java java_jar_sets
start_step node node_packages
start_step containers bash scripts/container-base.sh
start_step go-modules go_modules
start_step other-pythons other_pythons
finish_steps

# --- Java: Spark's connectors, once the venv's PySpark and the other Maven sets are there ---
# Spark's Kafka connector for each PySpark the tests run on, at the version kafkalite.spark picks
# for it (PySpark's own when Maven Central serves it, else the newest served of its major version)
for spark_python in "$VENV/bin/python" "env PYTHONPATH=$SPARK_OLDEST_DIR $VENV/bin/python"; do
    connector="$($spark_python -m kafkalite.spark --connector-version)"
    maven_jars spark-kafka "$connector"
done
# spark-avro (from_avro) for the schema registry's Spark example, at the newest PySpark's connector
maven_jars spark-avro "$("$VENV/bin/python" -m kafkalite.spark --connector-version)"
go_driver

echo "test dependencies ready in $DEPS"
