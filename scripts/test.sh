#!/usr/bin/env bash
# Installs everything the tests need, then runs every test: unit tests of protocol/, storage/,
# broker/ and kafkalite/, the compatibility suite (all clients) and the Spark tests.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m java` or `scripts/test.sh -k compression`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
export PATH="$PWD/.deps/bin:$PATH"
exec python3 -m pytest "$@"
