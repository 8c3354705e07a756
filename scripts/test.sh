#!/usr/bin/env bash
# Installs everything the tests need, checks the code (ruff, mypy; configured in pyproject.toml;
# a finding fails the run), then runs every test (pyproject.toml's testpaths): unit tests of
# protocol/, storage/, broker/ and kafkalite/, the compatibility suite (all clients, the framework
# applications, the history checker), the Spark, container and fault tests, on kafkalite;
# then the transaction, idempotence and offsets tests of the compatibility suite once more on
# Apache Kafka (compat_tests/reference.py), the judge of what they assert.
# Both runs spread their test files over TEST_WORKERS processes (pytest-xdist, default 3 and 2):
# a file's tests stay together on one worker (--dist loadfile), so module fixtures are set up once,
# and every worker has its own session broker, Spark session and Java driver. The suite mostly
# waits on brokers, JVMs and clients, so this divides its wall time even on two cores.
# TEST_WORKERS=0 runs each pass in one process, as before.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m java` or `scripts/test.sh -k compression`;
# with arguments, only that one run happens. COMPAT_BROKER=kafka runs it on Apache Kafka.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
export PATH="$PWD/.deps/bin:$PATH"
python3 -m ruff check broker storage protocol kafkalite
python3 -m mypy
if [ $# -gt 0 ] || [ -n "${KAFKA_BOOTSTRAP:-}" ] || [ -n "${COMPAT_BROKER:-}" ]; then
    exec python3 -m pytest "$@"
fi
status=0
workers="${TEST_WORKERS:-3}"
python3 -m pytest -n "$workers" --dist loadfile || status=$?
# The security, share_groups and streams_groups tests pass on Apache Kafka too (python -m
# compat_tests.report --broker kafka) but are left out here: their fast tests took 6 min (share and
# streams groups, 20 tests) and 4.4 min (security, 97 tests) on Kafka at load ~8, and the whole
# run must stay under 25 min.
COMPAT_BROKER=kafka python3 -m pytest -n "$(( workers < 2 ? workers : 2 ))" --dist loadfile compat_tests -m "(transactions or idempotence or offsets) and not slow" \
    || status=$?
exit "$status"
