"""The tests scripts/quick.sh runs for a set of changed files: the in-process tests of each package
touched, one real-client smoke test per area touched, and the changed test files themselves.

Usage: python scripts/quick_tests.py CHANGED_PATH... (paths relative to the repository's root, as
`git diff --name-only` prints them); prints one pytest argument a line.

A test file is in-process when nothing in it starts a broker process: no call of `running`,
`kafkalite.start`, `Popen`, `subprocess.*`, and no test or fixture taking a fixture that starts one (the
PROCESS_FIXTURES below: broker/tests/conftest.py's and the pytest plugin's). The rule is read from
each file's syntax tree, so a file moved in-process joins the quick run without a list to edit.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Fixtures that start a broker process: broker/tests/conftest.py's and kafkalite.pytest_plugin's.
PROCESS_FIXTURES = frozenset({
    "broker", "wire", "controls_broker", "console_broker", "kafka_bootstrap", "kafkalite_broker",
    "kafka_topic", "kafka_topic_factory", "kafka_clean", "kafkalite_controls", "kafkalite_fresh",
    "schema_registry_url", "registry", "registry_url",
})
# calls that start a process, by their dotted name as written
PROCESS_CALLS = frozenset({"running", "kafkalite.running", "kafkalite.start", "launcher.start", "Popen"})

# Each package's in-process tests live in its tests folder (subfolders included).
PACKAGE_TESTS = {"protocol": "protocol/tests", "storage": "storage/tests", "broker": "broker/tests",
                 "kafkalite": "kafkalite/tests"}

# One real-client smoke per area: the first prefix a changed path starts with picks it.
SMOKES: list[tuple[str, str]] = [
    ("broker/groups/", "compat_tests/test_groups.py::test_consume_commit_and_resume[confluent-consumer]"),
    ("broker/handlers/group", "compat_tests/test_groups.py::test_consume_commit_and_resume[confluent-classic]"),
    ("broker/handlers/offset", "compat_tests/test_groups.py::test_consume_commit_and_resume[confluent-classic]"),
    ("broker/transactions/", "compat_tests/test_transactions.py::test_commit_and_abort_across_topics_and_partitions[librdkafka]"),
    ("broker/handlers/txn", "compat_tests/test_transactions.py::test_commit_and_abort_across_topics_and_partitions[librdkafka]"),
    ("broker/share/", "compat_tests/test_share_groups.py::test_three_consumers_share_one_partition[librdkafka]"),
    ("broker/handlers/share", "compat_tests/test_share_groups.py::test_three_consumers_share_one_partition[librdkafka]"),
    ("broker/sasl", "compat_tests/test_security.py::test_produce_consume[sasl_plaintext-plain-librdkafka]"),
    ("broker/security", "compat_tests/test_security.py::test_produce_consume[sasl_ssl-scram256-librdkafka]"),
    ("broker/authorizer", "compat_tests/test_security.py::test_produce_consume[sasl_plaintext-plain-librdkafka]"),
    ("broker/handlers/admin", "compat_tests/test_admin.py::test_create_describe_delete_topics[librdkafka]"),
    ("broker/controls/", "compat_tests/test_controls.py::test_dropped_produce_response_is_retried_and_deduplicated[librdkafka]"),
    ("broker/console/", "broker/tests/test_console.py"),
    ("broker/schema_registry/", "compat_tests/schema_registry"),
    ("broker/", "compat_tests/test_produce_fetch.py::test_keys_and_values[librdkafka]"),
    ("protocol/", "compat_tests/test_produce_fetch.py::test_headers[librdkafka]"),
    ("storage/", "compat_tests/test_produce_fetch.py::test_many_batches_in_order[librdkafka]"),
    ("kafkalite/", "kafkalite/tests/test_api.py"),
]


def starts_a_process(test_file: Path) -> bool:
    tree = ast.parse(test_file.read_text(), str(test_file))
    # tests and fixtures are the module's test_ and fixture functions and its classes' (a helper's or
    # a nested function's parameter named `broker` is the in-process state, not the fixture)
    outer = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    for node in tree.body + [m for c in outer for m in c.body]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                node.name.startswith("test") or any("fixture" in ast.unparse(d) for d in node.decorator_list)):
            if {a.arg for a in node.args.args + node.args.kwonlyargs} & PROCESS_FIXTURES:
                return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in PROCESS_CALLS or name.startswith("subprocess.") or name.endswith(".Popen"):
                return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            names = [module or ""] + [alias.name for alias in node.names]
            if any(n == "subprocess" or n.startswith("compat_tests.brokers") for n in names):
                return True
    return False


def in_process_tests(package_tests: str) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in sorted((ROOT / package_tests).rglob("test_*.py"))
            if not starts_a_process(p)]


def normalise(path: str) -> str:
    """kafkalite/broker/x and broker/x are one file: the name under the repository's root."""
    for package in ("broker", "protocol", "storage"):
        if path.startswith(f"kafkalite/{package}/"):
            return path.removeprefix("kafkalite/")
    return path


def selection(changed: list[str]) -> list[str]:
    chosen: list[str] = []
    paths = [normalise(p) for p in changed if p.endswith(".py") and (ROOT / p).exists()]
    for package, tests in PACKAGE_TESTS.items():
        if any(p.startswith(f"{package}/") for p in paths):
            chosen += in_process_tests(tests)
    for path in paths:
        smoke = next((test for prefix, test in SMOKES if path.startswith(prefix)), None)
        if smoke is not None:
            chosen.append(smoke)
        if Path(path).name.startswith("test_"):
            chosen.append(path)
    return list(dict.fromkeys(chosen))


if __name__ == "__main__":
    print("\n".join(selection(sys.argv[1:])))
