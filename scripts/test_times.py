"""Where a full run's time went: the test files that took longest, from the passes' JUnit XML.

scripts/test.sh has each pass write pytest's JUnit XML (a test case's time there is its setup, call
and teardown) into .cache/test-times/ and runs this at its end:

    python scripts/test_times.py [--top N] PASS.xml ...

prints, per pass, the test count and summed test time, then the N files with the most summed test
time over all passes (worker seconds, not wall time: the passes and their workers run side by side),
each with its pass, test count and slowest test. It is the list to cut from first to keep the whole
command within its 18 minutes. Only the standard library: it runs in any of the venvs.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def cases(xml: Path) -> list[tuple[str, str, float]]:
    """(file, test name, seconds) of each test case in one JUnit XML file."""
    out = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        # classname is the dotted module path and the class, if any: "compat_tests.test_groups"
        module = case.get("classname", "")
        path = module.replace(".", "/")
        while path and path.rsplit("/", 1)[-1][:1].isupper():  # a test class's name, not a file
            path = path.rsplit("/", 1)[0]
        out.append((f"{path}.py", case.get("name", ""), float(case.get("time") or 0)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xml", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    files: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    for xml in args.xml:
        if not xml.is_file():
            print(f"{xml}: no such file (that pass did not finish)", file=sys.stderr)
            continue
        found = cases(xml)
        print(f"{xml.stem}: {len(found)} tests, {sum(t for _, _, t in found):.0f} s of test time")
        for path, name, seconds in found:
            files[(xml.stem, path)].append((name, seconds))
    ranked = sorted(files.items(), key=lambda kv: -sum(t for _, t in kv[1]))
    print(f"the {args.top} test files with the most test time (pass, seconds, tests, slowest test):")
    for (pass_name, path), tests in ranked[:args.top]:
        name, slowest = max(tests, key=lambda nt: nt[1])
        print(f"  {pass_name:10} {sum(t for _, t in tests):7.1f} s {len(tests):4}  {path}  ({name} {slowest:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
