"""python -m compat_tests.differ REFERENCE_BOOTSTRAP SUBJECT_BOOTSTRAP [-k SUBSTRING]

Runs every conversation (lowest and highest common version) against two running brokers and
prints each difference, whether known.py accepts it, and the number of fields compared."""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from . import admin_conversations  # noqa: F401  (registers its conversations)
from .conversations import CONVERSATIONS
from .core import common_versions, compare, run
from .known import accepted


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compat_tests.differ")
    ap.add_argument("reference")
    ap.add_argument("subject")
    ap.add_argument("-k", default="")
    args = ap.parse_args(argv)
    both = common_versions(args.reference, args.subject)
    total_fields = total_unexpected = runs = 0
    for name, conv in CONVERSATIONS.items():
        if args.k not in name:
            continue
        for end in ("lowest", "highest"):
            version = both[conv.api_key][0 if end == "lowest" else 1]
            t0 = time.monotonic()
            try:
                a = run(conv.fn, args.reference, conv.labels, f"{conv.api_key}{end[0]}", api_key=conv.api_key,
                        end=end, versions=both)
                b = run(conv.fn, args.subject, conv.labels, f"{conv.api_key}{end[0]}", api_key=conv.api_key,
                        end=end, versions=both)
            except Exception:
                print(f"== {name} {end} (v{version}): ERROR")
                traceback.print_exc()
                total_unexpected += 1
                continue
            result = compare(a, b)
            runs += 1
            total_fields += result.fields
            print(f"== {name} {end} (v{version}): {result.fields} fields, {len(result.differences)} differences "
                  f"({time.monotonic() - t0:.1f} s)")
            for d in result.differences:
                reason = accepted(name, d.path)
                if reason is None:
                    total_unexpected += 1
                print(f"   {'known' if reason else 'DIFF '} {d}" + (f"  [{reason}]" if reason else ""))
    print(f"{runs} runs, {total_fields} fields compared, {total_unexpected} unexpected differences or errors")
    return 1 if total_unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
