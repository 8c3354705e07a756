#!/usr/bin/env bash
# Installs everything the tests need, checks the code (ruff, mypy; configured in pyproject.toml),
# then runs every test: unit tests of protocol/, storage/, broker/ and kafkalite/, the
# compatibility suite (all clients) and the Spark tests. A lint or type error fails the run.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m java` or `scripts/test.sh -k compression`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
export PATH="$PWD/.deps/bin:$PATH"
python3 -m ruff check broker storage protocol kafkalite
python3 -m mypy
exec python3 -m pytest "$@"
