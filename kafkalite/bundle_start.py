"""The entry point of a `kafkalite bundle` file (built by kafkalite.bundle): the `kafkalite`
command, after checking that this interpreter and machine are the ones the bundle's compiled
libraries were built for (one line and exit status 2 otherwise)."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

from .bundle import TARGET_FILE, describe, running_target


def start() -> int:
    gc.disable()  # as kafkalite/__main__.py: fast_start turns it back on after the imports
    target_path = Path(__file__).with_name(TARGET_FILE)
    if target_path.exists():
        built_for = json.loads(target_path.read_text())
        here = running_target()
        if any(built_for.get(k) != v for k, v in here.items()):
            print(f"kafkalite: this bundle was built for {describe(built_for)} and this is "
                  f"{describe(here)}; build one here with `kafkalite bundle OUT`", file=sys.stderr)
            return 2
    from .broker.cli import main

    return main()
