"""Benchmarks that print comparable figures: kafkalite against a peer broker in the same run.

Run from the repository root: ``python -m bench`` (all, quick defaults) or
``python -m bench.<name>`` for one. See bench/README.md.
"""
