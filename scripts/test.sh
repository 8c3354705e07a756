#!/usr/bin/env bash
# Installs everything the tests need (scripts/install-test-deps.sh: a .venv with the newest
# versions pyproject.toml allows, made anew when pyproject.toml changed; everything Python runs
# from it), checks the code (ruff, mypy; configured in pyproject.toml;
# a finding fails the run), then runs every test (pyproject.toml's testpaths): unit tests of
# protocol/, storage/, broker/ and kafkalite/, the compatibility suite (all clients, the framework
# applications, the history checker), the Spark, container and fault tests, on kafkalite;
# beside that pass, from its start: ruff and mypy, and the Kafka side (the compatibility tests that
# Apache Kafka judges, the Spark tests on the oldest PySpark 4, the lowest-versions job), which the
# comment above their commands below lists.
# The kafkalite pass spreads its test files over TEST_WORKERS processes (pytest-xdist, default 3), the
# Kafka side over two: a file's tests stay together on one worker (--dist loadfile), so module
# fixtures are set up once, and every worker has its own session broker and Java driver; the files
# sharing a Spark session, or the differ's two brokers, go to one worker together
# (kafkalite/tests/shared_sessions.py), which starts them once. TEST_WORKERS=0 runs each pass in
# one process.
# After each change, scripts/quick.sh is the loop to run (a minute or two); this is the full run.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m java` or `scripts/test.sh -k compression`;
# with arguments, only that one run happens (in the existing .venv when there is one).
# COMPAT_BROKER=kafka runs it on Apache Kafka.
set -euo pipefail
cd "$(dirname "$0")/.."
# Python may keep its bytecode: an environment that forbids it (PYTHONDONTWRITEBYTECODE, set on
# some CI machines) makes every process of the run compile what it imports anew, and pytest
# rewrite every test file's asserts in every worker (9 CPU-s a collection against 3.5).
unset PYTHONDONTWRITEBYTECODE
# the loadfile scheduler that keeps the files sharing a Spark session, or the differ's brokers,
# on one worker (kafkalite/tests/shared_sessions.py; its hook is unused without xdist)
SCHEDULER=(-p kafkalite.tests.shared_sessions)
if [ $# -gt 0 ] || [ -n "${KAFKA_BOOTSTRAP:-}" ] || [ -n "${COMPAT_BROKER:-}" ]; then
    export KAFKALITE_REUSE_VENV="${KAFKALITE_REUSE_VENV:-1}"
fi
# Each part's wall time, and how busy the machine's cores were meanwhile (/proc/stat), are printed
# when it ends: the whole command's budget is 18 minutes from an empty clone, on two cores.
read_cpu_ticks() {
    # the machine's busy and total clock ticks so far, from /proc/stat's first line
    # (user nice system idle iowait irq softirq steal)
    read -r _ user nice system idle iowait irq softirq steal _ < /proc/stat
    busy_ticks=$(( user + nice + system + irq + softirq + steal ))
    total_ticks=$(( busy_ticks + idle + iowait ))
}
read_cpu_ticks
part_start=$SECONDS part_busy=$busy_ticks part_total=$total_ticks
# KAFKALITE_CPU_REPORT=1 (a full run only): scripts/cpu_report.py samples every process beside the
# whole command and, at its end, prints the CPU time by program and by the test file that started
# it: the command's budget is CPU, which wall times do not show (its sampling costs about 1 %)
cpu_report_pid=""
if [ $# -eq 0 ] && [ "${KAFKALITE_CPU_REPORT:-}" = 1 ]; then
    cpu_report="${KAFKALITE_CACHE_DIR:-$PWD/.cache}/cpu-report.txt"
    # and the CPU of the tests run in the pytest processes themselves, by test file
    # (kafkalite/tests/cpu_by_test.py, in both passes)
    cpu_by_test="${KAFKALITE_CACHE_DIR:-$PWD/.cache}/cpu-by-test"
    rm -rf "$cpu_by_test"
    SCHEDULER+=(-p kafkalite.tests.cpu_by_test "--cpu-by-test=$cpu_by_test")
    mkdir -p "$(dirname "$cpu_report")"
    python3 scripts/cpu_report.py --out "$cpu_report" --in-process "$cpu_by_test" &
    cpu_report_pid=$!
    # a run that fails before its end (the install, say) does not leave it sampling
    trap 'kill "$cpu_report_pid" 2>/dev/null || true' EXIT
fi
part_done() {
    read_cpu_ticks
    local total=$(( total_ticks - part_total ))
    echo "== $1: $(( SECONDS - part_start )) s, the cores $(( total > 0 ? (busy_ticks - part_busy) * 100 / total : 0 )) % busy;" \
        "the command so far: $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s"
    part_start=$SECONDS part_busy=$busy_ticks part_total=$total_ticks
}
# Maven's own JVM (the install's jar sets, the JUnit 5 extension's `mvn install` in the suite) with
# the JIT at C1 and the serial collector: a Maven run is short, and C2 compiling Maven itself cost
# about half of each run's CPU (8.6 against 4.0 s of user time, `dependency:copy-dependencies` offline)
export MAVEN_OPTS="${MAVEN_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto}"
bash scripts/install-test-deps.sh
part_done "installing the test dependencies"
VENV="${KAFKALITE_VENV:-$PWD/.venv}"
# the venv's python first on PATH: `python3` in a test's subprocess is the venv's too
export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PWD/.deps/bin:$PATH"
if [ $# -gt 0 ] || [ -n "${KAFKA_BOOTSTRAP:-}" ] || [ -n "${COMPAT_BROKER:-}" ]; then
    python -m ruff check .
    python -m mypy
    exec python -m pytest "${SCHEDULER[@]}" "$@"
fi
status=0
workers="${TEST_WORKERS:-3}"
kafka_workers="$(( workers < 2 ? workers : 2 ))"
# The full run keeps no pytest cache (--lf/--ff are for scripts/quick.sh and runs with arguments):
# each pass starts from the same nothing, in CI's clean clone as here.
export PYTEST_ADDOPTS="${PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }-p no:cacheprovider"
# What runs beside the kafkalite pass, each with its output in a file of its own, shown after that
# pass with its time. The kafkalite pass alone left the cores a quarter idle (75 % busy: its tests
# wait on client processes, JVMs and timeouts), and every part below is CPU-bound, so they fill
# that time instead of following it (in the previous order: 17, 8 and 1 minutes one after another).
# - ruff and mypy (their findings fail the run all the same);
# - the Kafka side, one part after the other on $kafka_workers workers: the transaction,
#   idempotence, offsets, security, share group, streams group, Kafka tools (compat_tests/tools) and
#   cluster admin tests of the compatibility suite, the ones marked on_kafka_too (KIP-848 heartbeats
#   and lost heartbeat answers, compaction against Kafka's cleaner, dynamic broker configs, Connect
#   and MirrorMaker 2), and bench/tests (rdkperf's idempotent and transactional runs), once more on
#   Apache Kafka (compat_tests/reference.py), the judge of what they assert. The rest of the
#   compatibility suite (the slow-marked tests, clients, admin, groups...) runs on Apache Kafka with
#   `COMPAT_BROKER=kafka scripts/test.sh compat_tests` (python -m compat_tests.report puts both
#   brokers side by side); it is left out here for time. The tests' Kafka starts with the JIT at C1
#   and a class archive (compat_tests/reference.py), without which several workers' brokers starved
#   kafka-verifiable-consumer of its 120 s;
# - then Spark on the oldest PySpark 4 whose connector is served (install-test-deps.sh installs it,
#   its SPARK_OLDEST, into this folder, put first on PYTHONPATH; the example pipeline and one batch
#   test, for time), and the lowest-versions job (scripts/test-lowest.sh) on $kafka_workers workers.
# `part_line NAME START` prints a part's wall time in the lines above.
part_line() { echo "== $1: $(( SECONDS - $2 )) s, ended $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s into the command"; }
# each pass's JUnit XML (every test's time), which scripts/test_times.py sums per file at the end
times_dir="${KAFKALITE_CACHE_DIR:-$PWD/.cache}/test-times"
rm -rf "$times_dir" && mkdir -p "$times_dir"
lint_log="$(mktemp)" beside_log="$(mktemp)"
(
    lint_start=$SECONDS
    python -m ruff check . && python -m mypy
    lint_status=$?
    part_line "ruff and mypy" "$lint_start"
    exit "$lint_status"
) > "$lint_log" 2>&1 &
lint_pid=$!
(
    beside_status=0 kafka_start=$SECONDS
    COMPAT_BROKER=kafka python -m pytest "${SCHEDULER[@]}" -n "$kafka_workers" --dist loadfile --durations=15 \
        --junitxml "$times_dir/kafka.xml" compat_tests bench/tests \
        -m "(transactions or idempotence or offsets or security or share_groups or streams_groups or on_kafka_too or tools or cluster_admin) and not slow" \
        || beside_status=1
    part_line "the tests on Apache Kafka" "$kafka_start"
    lowest_start=$SECONDS
    PYTHONPATH="${KAFKALITE_CACHE_DIR:-$PWD/.cache}/pyspark-4.0.0" python -m pytest spark_tests \
        -k "test_pipeline_totals_per_user_across_runs or test_batch_write_topic_column_key_value_headers_partition" \
        || beside_status=1
    PYTEST_ADDOPTS="$PYTEST_ADDOPTS --junitxml $times_dir/lowest.xml" TEST_WORKERS="$kafka_workers" \
        bash scripts/test-lowest.sh || beside_status=1
    part_line "the Spark tests on PySpark 4.0.0 and the lowest-versions job" "$lowest_start"
    exit "$beside_status"
) > "$beside_log" 2>&1 &
beside_pid=$!
# --durations: the slowest tests of each pass at the end of its output, to keep the whole command
# within its time budget (18 minutes from an empty clone)
python -m pytest "${SCHEDULER[@]}" -n "$workers" --dist loadfile --durations=25 --junitxml "$times_dir/kafkalite.xml" \
    || status=$?
part_done "the tests on kafkalite"
wait "$beside_pid" || status=$?
wait "$lint_pid" || status=$?
cat "$lint_log" "$beside_log"
rm -f "$lint_log" "$beside_log"
python scripts/test_times.py "$times_dir/kafkalite.xml" "$times_dir/kafka.xml" "$times_dir/lowest.xml" || status=$?
part_done "after them, the end of what ran beside them"
if [ -n "$cpu_report_pid" ]; then
    trap - EXIT
    kill -TERM "$cpu_report_pid" && wait "$cpu_report_pid" && cat "$cpu_report" || status=1
fi
exit "$status"
