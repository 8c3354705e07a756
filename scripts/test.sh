#!/usr/bin/env bash
# Installs everything the tests need, checks the code (ruff, mypy; configured in pyproject.toml;
# a finding fails the run), then runs every test (pyproject.toml's testpaths): unit tests of
# protocol/, storage/, broker/ and kafkalite/, the compatibility suite (all clients, the framework
# applications, the history checker), the Spark, container and fault tests, on kafkalite;
# then the transaction, idempotence, offsets, security, share group, streams group, Kafka tools
# (compat_tests/tools) and cluster admin tests of the compatibility suite (and bench/tests: rdkperf's idempotent and transactional runs) once more on
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
python3 -m ruff check .
python3 -m mypy
if [ $# -gt 0 ] || [ -n "${KAFKA_BOOTSTRAP:-}" ] || [ -n "${COMPAT_BROKER:-}" ]; then
    exec python3 -m pytest "$@"
fi
status=0
workers="${TEST_WORKERS:-3}"
python3 -m pytest -n "$workers" --dist loadfile || status=$?
# The rest of the compatibility suite (the slow-marked tests, clients, admin, groups...) runs on
# Apache Kafka with `COMPAT_BROKER=kafka scripts/test.sh compat_tests` (python -m
# compat_tests.report puts both brokers side by side); it is left out here for time: this pass
# took 5 min on two workers (198 tests), the whole command about 18 min from an empty clone.
COMPAT_BROKER=kafka python3 -m pytest -n "$(( workers < 2 ? workers : 2 ))" --dist loadfile compat_tests bench/tests \
    -m "(transactions or idempotence or offsets or security or share_groups or streams_groups or tools or cluster_admin) and not slow" \
    || status=$?
exit "$status"
