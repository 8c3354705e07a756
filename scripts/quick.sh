#!/usr/bin/env bash
# The loop to run after each change (under 2 minutes with a warm venv), before the full command
# (scripts/test.sh) that CI runs:
#   1. ruff on the Python files changed since the base (QUICK_BASE, default main; HEAD when there is
#      no such branch) and in the work tree, untracked ones included;
#   2. mypy on the package (its incremental cache, .mypy_cache, makes a second run seconds);
#   3. pytest on what scripts/quick_tests.py picks for those files: the in-process tests of each
#      package touched (protocol, storage, broker, kafkalite), one real-client smoke per area touched
#      and the changed test files; previous failures first (--ff), stop at the first failure (-x).
# Extra arguments go to pytest (e.g. `scripts/quick.sh --lf`). It uses the venv it finds (VIRTUAL_ENV,
# else .venv); it installs nothing (scripts/install-test-deps.sh does). Each step prints its time.
set -euo pipefail
cd "$(dirname "$0")/.."
# bytecode kept (scripts/test.sh says why)
unset PYTHONDONTWRITEBYTECODE
if [ -z "${VIRTUAL_ENV:-}" ] && [ -x .venv/bin/python ]; then
    export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PWD/.deps/bin:$PATH"
fi
start=$SECONDS
step_done() { echo "== quick: $1 in $(( SECONDS - step_start )) s"; step_start=$SECONDS; }
step_start=$SECONDS

base="${QUICK_BASE:-main}"
if ! git rev-parse --verify -q "$base" >/dev/null; then base=HEAD; fi
mapfile -t changed < <({
    git diff --name-only --diff-filter=d "$(git merge-base "$base" HEAD)" HEAD
    git diff --name-only --diff-filter=d HEAD
    git ls-files --others --exclude-standard
} | sort -u)
echo "== quick: ${#changed[@]} files changed since $base (and in the work tree)"

mapfile -t changed_python < <(printf '%s\n' "${changed[@]}" | grep '\.py$' || true)
if [ ${#changed_python[@]} -gt 0 ]; then
    python -m ruff check "${changed_python[@]}"
fi
step_done "ruff on ${#changed_python[@]} files"
python -m mypy
step_done "mypy"

mapfile -t tests < <(python scripts/quick_tests.py "${changed[@]}")
if [ ${#tests[@]} -eq 0 ] && [ $# -eq 0 ]; then
    echo "== quick: no Python file of a package changed: no tests to run"
else
    echo "== quick: ${#tests[@]} test files and smokes: ${tests[*]}"
    python -m pytest -q -x --ff -n "${QUICK_WORKERS:-2}" "${tests[@]}" "$@"
fi
step_done "the tests"
echo "== quick: done in $(( SECONDS - start )) s"
