#!/usr/bin/env bash
# The lowest-versions job: a second fresh venv (.venv-lowest, ignored by git) with the lowest
# version of every direct dependency that pyproject.toml allows (uv's --resolution lowest-direct;
# uv comes from .venv, made by scripts/install-test-deps.sh), running the unit tests of protocol/,
# storage/, broker/ (the console's browser tests included) and kafkalite/, so that the lower bound
# of every range is proven as the main run proves the newest versions. It prints the versions it
# tested. Left out: the slow-marked tests, and the wheel and Java example tests, which install or
# run nothing from this venv's versions. Extra arguments go to pytest (instead of the default
# selection).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${KAFKALITE_VENV:-$PWD/.venv}"
LOWEST="${KAFKALITE_LOWEST_VENV:-$PWD/.venv-lowest}"
# uv's cache stays the user's unless KAFKALITE_CACHE_DIR moves it (as in install-test-deps.sh)
if [ -n "${KAFKALITE_CACHE_DIR:-}" ]; then export UV_CACHE_DIR="$KAFKALITE_CACHE_DIR/uv"; fi
rm -rf "$LOWEST"
python3 -m venv "$LOWEST"
"$VENV/bin/uv" pip install --quiet --python "$LOWEST/bin/python" --resolution lowest-direct \
    -e '.[test,console,tls,compression,testcontainers]'
"$LOWEST/bin/python" - <<'PY'
from importlib.metadata import version
print("lowest versions:", ", ".join(f"{n} {version(n)}" for n in (
    "trio", "kio", "crc32c", "anyio", "starlette", "hypercorn", "cramjam", "trustme", "cryptography",
    "testcontainers", "confluent-kafka", "pytest", "playwright")))
PY
if [ $# -eq 0 ]; then
    set -- -n "${TEST_WORKERS:-3}" --dist loadfile -m "not slow" kafkalite/protocol/tests kafkalite/storage/tests \
        kafkalite/broker/tests kafkalite/tests \
        --ignore=kafkalite/tests/test_wheel.py --ignore=kafkalite/tests/test_java_example.py
fi
PATH="$LOWEST/bin:$PATH" VIRTUAL_ENV="$LOWEST" "$LOWEST/bin/python" -m pytest "$@"
