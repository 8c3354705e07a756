"""``python -m bench``: run every benchmark with quick defaults (see bench/run_all.py)."""

from bench.run_all import main

main()
