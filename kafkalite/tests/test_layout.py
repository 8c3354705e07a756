"""The package's one name: broker/, protocol/ and storage/ are kafkalite.broker, kafkalite.protocol
and kafkalite.storage, and nothing imports or collects them under a second name
(kafkalite/tests/layout.py, the guard in each package's __init__)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kafkalite.tests.layout import REPO_ROOT


@pytest.mark.parametrize("package", ["broker", "protocol", "storage"])
def test_a_second_name_is_refused_in_one_line(package: str) -> None:
    proc = subprocess.run([sys.executable, "-c", f"import {package}"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    assert proc.stderr.splitlines()[-1] == (
        f"ImportError: {package} is kafkalite.{package}: import it by that name (one name, one copy of its modules)")


def collected(*paths: str, cwd: str = str(REPO_ROOT)) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *paths],
                          cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_each_test_is_collected_once_under_its_package_name_whatever_path_names_it() -> None:
    one_name = collected("kafkalite/protocol/tests/test_records.py")
    assert one_name and all(n.startswith("kafkalite/protocol/tests/test_records.py::") for n in one_name)
    assert collected("protocol/tests/test_records.py", "kafkalite/protocol/tests/test_records.py") == one_name
    first = one_name[0].partition("::")[2]
    assert collected(f"protocol/tests/test_records.py::{first}") == [one_name[0]]
    # from inside the folder, by a relative path
    inside = collected("test_records.py", cwd=str(REPO_ROOT / "protocol" / "tests"))
    assert [n.rpartition("/")[2] for n in inside] == [n.rpartition("/")[2] for n in one_name]


def test_importing_kafkalite_imports_none_of_its_modules_nor_the_launchers_libraries() -> None:
    # kafkalite/__init__.py's rule: the broker's own start (python -m kafkalite) imports it first
    proc = subprocess.run([sys.executable, "-c", "import sys, kafkalite; print(sorted(m for m in sys.modules if m in "
                           "('subprocess', 'tempfile', 'threading') or m.startswith('kafkalite.')))"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
