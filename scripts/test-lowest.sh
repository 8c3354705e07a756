#!/usr/bin/env bash
# The lowest-versions job: a second venv (.venv-lowest, ignored by git) with the lowest version of
# every direct dependency that pyproject.toml allows (uv's --resolution lowest-direct; uv comes
# from .venv, made by scripts/install-test-deps.sh), so that the lower bound of every range is
# proven as the main run proves the newest versions. It prints the versions it tested.
# What it runs:
# - in full (the unit tests of protocol/, storage/, broker/ with the console's browser tests, and
#   kafkalite/, and the charts) when pyproject.toml changed since its last full pass: scripts/lowest-full-pass.sha256,
#   kept in git, holds pyproject.toml's hash as it was at the last full pass that succeeded, and a
#   full pass writes it; so a change of pyproject.toml runs in full wherever it is first tested,
#   and its commit carries the new hash once that pass is green (a clean clone of a commit whose
#   pyproject.toml was proven at the lowest versions runs only the ranged modules; one whose
#   pyproject.toml was not, in full). LOWEST_FULL=1 forces it;
# - otherwise only the test files of the modules whose dependencies have ranges beyond the core's
#   (RANGED_TESTS below: the console, the controls, the schema registry, the CLI, the pytest plugin,
#   TLS, compression, testcontainers, the benchmarks' charts, and the reset control that set
#   confluent-kafka's floor): the versions installed are the same as at the full pass, and the rest of the code runs the core
#   (trio, kio, crc32c) that the full pass proved.
# Left out in both: the slow-marked tests, the wheel and Java example tests, which install or
# run nothing from this venv's versions, and the isolation fixtures' cost ratio (below). The venv is reused while pyproject.toml is unchanged (a
# stamp of its hash in the venv). Extra arguments go to pytest (instead of the default selection).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${KAFKALITE_VENV:-$PWD/.venv}"
LOWEST="${KAFKALITE_LOWEST_VENV:-$PWD/.venv-lowest}"
# uv's cache stays the user's unless KAFKALITE_CACHE_DIR moves it (as in install-test-deps.sh)
if [ -n "${KAFKALITE_CACHE_DIR:-}" ]; then export UV_CACHE_DIR="$KAFKALITE_CACHE_DIR/uv"; fi
CACHE="${KAFKALITE_CACHE_DIR:-$PWD/.cache}"
LOWEST_INSTALL=(--resolution lowest-direct -e '.[test,console,tls,compression,testcontainers]')
pyproject_sha="$(sha256sum pyproject.toml | cut -d' ' -f1)"
lowest_sha="$( (cat pyproject.toml; echo "${LOWEST_INSTALL[*]}") | sha256sum | cut -d' ' -f1)"
if [ ! -x "$LOWEST/bin/python" ] || [ "$(cat "$LOWEST/.kafkalite-install.sha256" 2>/dev/null)" != "$lowest_sha" ]; then
    rm -rf "$LOWEST"
    python3 -m venv "$LOWEST"
    "$VENV/bin/uv" pip install --quiet --python "$LOWEST/bin/python" "${LOWEST_INSTALL[@]}"
    echo "$lowest_sha" > "$LOWEST/.kafkalite-install.sha256"
fi
"$LOWEST/bin/python" - <<'PY'
from importlib.metadata import version
print("lowest versions:", ", ".join(f"{n} {version(n)}" for n in (
    "trio", "kio", "crc32c", "anyio", "starlette", "hypercorn", "cramjam", "trustme", "cryptography",
    "testcontainers", "confluent-kafka", "pytest", "playwright", "matplotlib")))
PY
# the test files of the modules whose dependencies have ranges beyond the core's (see above)
RANGED_TESTS=(
    kafkalite/broker/tests/test_console.py kafkalite/broker/tests/test_console_browser.py  # starlette, hypercorn, anyio
    kafkalite/broker/tests/test_console_browser_groups.py kafkalite/broker/tests/test_console_controls.py
    kafkalite/broker/tests/test_controls_*.py                       # the controls (the console's stack), confluent-kafka
    kafkalite/broker/tests/schema_registry                          # avro, jsonschema, protobuf, proto-schema-parser
    kafkalite/broker/tests/test_cli_settings.py kafkalite/broker/tests/test_cli_metrics.py  # the CLI
    kafkalite/broker/tests/test_startup_errors.py
    kafkalite/tests/test_pytest_plugin.py kafkalite/tests/test_pytest_isolation.py          # pytest, the plugin
    kafkalite/tests/test_pytest_chaos.py
    kafkalite/broker/tests/test_security_config.py kafkalite/broker/tests/test_listeners.py # trustme, cryptography
    kafkalite/protocol/tests/test_records.py kafkalite/storage/tests/test_log.py            # cramjam
    kafkalite/storage/tests/test_compaction.py kafkalite/broker/tests/test_produce_validation.py
    kafkalite/tests/test_testcontainers.py                          # testcontainers
    bench/tests/test_charts.py                                      # matplotlib
)
full_pass_stamp="scripts/lowest-full-pass.sha256"
full=0
if [ $# -eq 0 ]; then
    if [ "${LOWEST_FULL:-}" = 1 ] || [ "$(cat "$full_pass_stamp" 2>/dev/null)" != "$pyproject_sha" ]; then
        full=1
        echo "lowest versions: the full selection (pyproject.toml is not the one $full_pass_stamp names)"
        set -- kafkalite/protocol/tests kafkalite/storage/tests kafkalite/broker/tests kafkalite/tests \
            bench/tests/test_charts.py \
            --ignore=kafkalite/tests/test_wheel.py --ignore=kafkalite/tests/test_java_example.py
    else
        echo "lowest versions: the modules with ranged dependencies (pyproject.toml as at the last full pass, $full_pass_stamp)"
        set -- "${RANGED_TESTS[@]}"
    fi
    # Left out as well: the isolation fixtures' cost ratio, medians of forty timed tests (bench.isolation's
    # project; a minute of a worker here). The kafkalite pass runs it; what it could find about the
    # lowest versions (the fixtures working on them) the file's other tests already prove.
    set -- -n "${TEST_WORKERS:-3}" --dist loadfile -m "not slow" \
        --deselect kafkalite/tests/test_pytest_isolation.py::test_the_fixtures_cost_less_than_a_broker_per_test "$@"
fi
PATH="$LOWEST/bin:$PATH" VIRTUAL_ENV="$LOWEST" "$LOWEST/bin/python" -m pytest "$@"
if [ "$full" = 1 ]; then echo "$pyproject_sha" > "$full_pass_stamp"; fi
