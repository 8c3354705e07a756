"""Coverage-guided fuzz targets (atheris / libFuzzer) over the broker's input paths.

    python -m fault_tests.fuzz TARGET [--seconds S] [--runs N] [--corpus DIR] [--artifacts DIR]

Targets:
  frames    bytes from a client socket through FrameReader, the request header parser,
            request decoding and dispatch to the handler of every API key and version in
            protocol.apis.API_TABLE, exactly as broker.connection.serve_connection does (it is the
            code under test), on an in-process broker with its coordinators running.
  records   one partition's records from a Produce request: the produce-path validator, then
            (when accepted) append to a partition log and read back.
  recovery  a segment file of valid batches with random corruption at any position (bytes
            overwritten, inserted, removed, or the file cut): recovery keeps every batch
            before the first damaged one, keeps only valid batches, and never raises.

A failure is any exception other than the ones the code path is documented to raise (for
frames: anything logged with a traceback by the server, an error-level log line, or a
connection the server neither answers nor closes within its time). The inputs that once
failed are kept in fault_tests/corpus/TARGET/ and replayed on every run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import atheris

HERE = Path(__file__).resolve().parent
CORPUS_ROOT = HERE / "corpus"
TARGETS = ("frames", "records", "recovery")

with atheris.instrument_imports(include=["protocol", "broker", "storage"]):
    from fault_tests import fuzz_targets


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fault_tests.fuzz")
    ap.add_argument("target", choices=TARGETS)
    ap.add_argument("--seconds", type=int, default=0, help="stop after this many seconds (0: no limit)")
    ap.add_argument("--runs", type=int, default=-1, help="stop after this many executions (-1: no limit)")
    ap.add_argument("--corpus", default=None,
                    help="directory where new interesting inputs go (default: a temporary one)")
    ap.add_argument("--artifacts", default=None, help="where a crashing input is written (default: cwd)")
    ap.add_argument("--max-len", type=int, default=4096)
    args, extra = ap.parse_known_args(argv)
    work = Path(args.corpus) if args.corpus else Path(tempfile.mkdtemp(prefix=f"fuzz-{args.target}-"))
    work.mkdir(parents=True, exist_ok=True)
    regression = CORPUS_ROOT / args.target
    seeds = Path(tempfile.mkdtemp(prefix=f"seeds-{args.target}-"))
    fuzz_targets.write_seeds(args.target, seeds)
    lf_args = [sys.argv[0], f"-max_len={args.max_len}", "-print_final_stats=1", "-timeout=20",
               "-rss_limit_mb=3072"]
    if args.seconds:
        lf_args.append(f"-max_total_time={args.seconds}")
    if args.runs >= 0:
        lf_args.append(f"-runs={args.runs}")
    if args.artifacts:
        Path(args.artifacts).mkdir(parents=True, exist_ok=True)
        lf_args.append(f"-artifact_prefix={os.path.join(args.artifacts, '')}")
    lf_args += extra
    # the first directory receives new inputs; the regression corpus and seeds are only read
    lf_args += [str(work), str(seeds)]
    if regression.is_dir():
        lf_args.append(str(regression))
    fuzz_targets.setup(args.target)
    atheris.Setup(lf_args, fuzz_targets.TARGET_FUNCTIONS[args.target])
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
