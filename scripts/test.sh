#!/usr/bin/env bash
# Installs everything the tests need (scripts/install-test-deps.sh: a .venv with the newest
# versions pyproject.toml allows, made anew when pyproject.toml changed; everything Python runs
# from it), checks the code (ruff, mypy; configured in pyproject.toml;
# a finding fails the run), then runs every test (pyproject.toml's testpaths): unit tests of
# protocol/, storage/, broker/ and kafkalite/, the compatibility suite (all clients, the framework
# applications, the history checker), the Spark, container and fault tests, on kafkalite;
# then the transaction, idempotence, offsets, security, share group, streams group, Kafka tools
# (compat_tests/tools) and cluster admin tests of the compatibility suite, the ones marked
# on_kafka_too (KIP-848 heartbeats and lost heartbeat answers, compaction against Kafka's cleaner,
# dynamic broker configs, Connect and MirrorMaker 2), and bench/tests (rdkperf's idempotent and transactional runs) once more on
# Apache Kafka (compat_tests/reference.py), the judge of what they assert.
# Both runs spread their test files over TEST_WORKERS processes (pytest-xdist, default 3):
# a file's tests stay together on one worker (--dist loadfile), so module fixtures are set up once,
# and every worker has its own session broker, Spark session and Java driver. The suite mostly
# waits on brokers, JVMs and clients, so this divides its wall time even on two cores.
# TEST_WORKERS=0 runs each pass in one process, as before.
# Beside that Kafka pass, the Spark tests' smallest part once more on the oldest PySpark 4 whose
# Kafka connector Maven Central serves, then the lowest-versions job (scripts/test-lowest.sh, on two
# workers): the lowest versions pyproject.toml allows, in a second venv, under the unit tests and
# the console's browser test when pyproject.toml changed since its last full pass, otherwise under
# the test files of the modules whose dependencies have ranges (test-lowest.sh says which).
# After each change, scripts/quick.sh is the loop to run (a minute or two); this is the full run.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m java` or `scripts/test.sh -k compression`;
# with arguments, only that one run happens (in the existing .venv when there is one).
# COMPAT_BROKER=kafka runs it on Apache Kafka.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ] || [ -n "${KAFKA_BOOTSTRAP:-}" ] || [ -n "${COMPAT_BROKER:-}" ]; then
    export KAFKALITE_REUSE_VENV="${KAFKALITE_REUSE_VENV:-1}"
fi
# Each part's wall time, and how busy the machine's cores were meanwhile (/proc/stat), are printed
# when it ends: the whole command's budget is 25 minutes from an empty clone, on two cores.
read_cpu_ticks() {
    # the machine's busy and total clock ticks so far, from /proc/stat's first line
    # (user nice system idle iowait irq softirq steal)
    read -r _ user nice system idle iowait irq softirq steal _ < /proc/stat
    busy_ticks=$(( user + nice + system + irq + softirq + steal ))
    total_ticks=$(( busy_ticks + idle + iowait ))
}
read_cpu_ticks
part_start=$SECONDS part_busy=$busy_ticks part_total=$total_ticks
part_done() {
    read_cpu_ticks
    local total=$(( total_ticks - part_total ))
    echo "== $1: $(( SECONDS - part_start )) s, the cores $(( total > 0 ? (busy_ticks - part_busy) * 100 / total : 0 )) % busy;" \
        "the command so far: $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s"
    part_start=$SECONDS part_busy=$busy_ticks part_total=$total_ticks
}
bash scripts/install-test-deps.sh
part_done "installing the test dependencies"
VENV="${KAFKALITE_VENV:-$PWD/.venv}"
# the venv's python first on PATH: `python3` in a test's subprocess is the venv's too
export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PWD/.deps/bin:$PATH"
python -m ruff check .
python -m mypy
part_done "ruff and mypy"
if [ $# -gt 0 ] || [ -n "${KAFKA_BOOTSTRAP:-}" ] || [ -n "${COMPAT_BROKER:-}" ]; then
    exec python -m pytest "$@"
fi
status=0
workers="${TEST_WORKERS:-3}"
# The full run keeps no pytest cache (--lf/--ff are for scripts/quick.sh and runs with arguments):
# each pass starts from the same nothing, in CI's clean clone as here.
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }-p no:cacheprovider"
# --durations: the slowest tests of each pass at the end of its output, to keep the whole command
# within its time budget (25 minutes from an empty clone)
python -m pytest -n "$workers" --dist loadfile --durations=25 || status=$?
part_done "the tests on kafkalite"
# The rest of the compatibility suite (the slow-marked tests, clients, admin, groups...) runs on
# Apache Kafka with `COMPAT_BROKER=kafka scripts/test.sh compat_tests` (python -m
# compat_tests.report puts both brokers side by side); it is left out here for time. This pass
# (282 tests) took 4 min 32 s to 5 min 1 s on three workers, 5 min 49 s on two; the tests' Kafka
# starts with the JIT at C1 and a class archive (compat_tests/reference.py), without which three
# workers' brokers starved kafka-verifiable-consumer of its 120 s.
# Beside the Kafka pass, which leaves the cores about half idle (54-63 % busy), run one after the
# other: Spark on the oldest PySpark 4 whose connector is served (install-test-deps.sh installs it,
# its SPARK_OLDEST, into this folder, put first on PYTHONPATH; the example pipeline and one batch
# test, for time), then the lowest-versions job on two workers. After the Kafka pass they took
# 52-67 s and 175-193 s more. Their output comes after the Kafka pass's.
beside_log="$(mktemp)"
(
    beside_status=0
    PYTHONPATH="${KAFKALITE_CACHE_DIR:-$PWD/.cache}/pyspark-4.0.0" python -m pytest spark_tests \
        -k "test_pipeline_totals_per_user_across_runs or test_batch_write_topic_column_key_value_headers_partition" \
        || beside_status=1
    TEST_WORKERS="$(( workers < 2 ? workers : 2 ))" bash scripts/test-lowest.sh || beside_status=1
    exit "$beside_status"
) > "$beside_log" 2>&1 &
beside_pid=$!
COMPAT_BROKER=kafka python -m pytest -n "$workers" --dist loadfile --durations=15 compat_tests bench/tests \
    -m "(transactions or idempotence or offsets or security or share_groups or streams_groups or on_kafka_too or tools or cluster_admin) and not slow" \
    || status=$?
part_done "the tests on Apache Kafka"
wait "$beside_pid" || status=$?
cat "$beside_log"
rm -f "$beside_log"
part_done "beside them, the Spark tests on PySpark 4.0.0 and the lowest-versions job"
exit "$status"
