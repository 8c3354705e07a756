"""A pytest plugin of this repository (pyproject.toml's addopts, `-p kafkalite.tests.layout`): the
folders broker/, protocol/ and storage/ are the package's kafkalite/broker, kafkalite/protocol and
kafkalite/storage (symlinks), and a test path given through the top-level folder is collected
through the package's name instead.

Collected as broker/tests/test_x.py, a test module would import as `broker.tests.test_x` and its
product modules under a second name, which their __init__ refuses (one line: "import it as
kafkalite.broker"); rewritten before the first conftest is read, `pytest broker/tests` is
`pytest kafkalite/broker/tests`, and given both paths pytest collects each test once (a repeated
path is dropped here).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
SECOND_NAMES = ("broker", "protocol", "storage")


def package_path(arg: str, invocation_dir: Path) -> str:
    """`arg` (a path or a node id) through kafkalite/ when it names a file of broker/, protocol/ or
    storage/ by their top-level folder; otherwise `arg` itself."""
    path, sep, node = arg.partition("::")
    if not path or path.startswith("-"):
        return arg
    given = invocation_dir / path
    if not given.exists():
        return arg
    real = Path(os.path.realpath(given))
    try:
        inside = real.relative_to(REPO_ROOT)
    except ValueError:
        return arg
    if not inside.parts or inside.parts[0] not in SECOND_NAMES:
        return arg
    through_package = REPO_ROOT / "kafkalite" / inside
    if Path(os.path.normpath(given)) == through_package:
        return arg
    return f"{os.path.relpath(through_package, invocation_dir)}{sep}{node}"


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str], parser: Any) -> None:
    namespace = early_config.known_args_namespace
    given: list[str] = list(getattr(namespace, "file_or_dir", None) or [])
    if not given:
        return
    invocation_dir = early_config.invocation_params.dir
    renamed = {arg: package_path(arg, invocation_dir) for arg in given}
    # a path given twice (once through each name) is given once: pytest before 8.1 collected a
    # repeated path twice
    namespace.file_or_dir = list(dict.fromkeys(renamed[arg] for arg in given))
    seen: set[str] = set()
    kept: list[str] = []
    for arg in args:
        new = renamed.get(arg, arg)
        if arg in renamed:
            if new in seen:
                continue
            seen.add(new)
        kept.append(new)
    args[:] = kept
