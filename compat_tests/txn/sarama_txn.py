"""Transactions through sarama (compat_tests/go, see go_txn.py)."""

from __future__ import annotations

from compat_tests.txn.go_txn import FENCED_ERRORS, bound

CLIENT = "sarama"
# what the client reports when it commits after the broker aborted a timed-out transaction
TIMEOUT_ERRORS = {"PRODUCER_FENCED"}
__all__ = ["CLIENT", "FENCED_ERRORS", "TIMEOUT_ERRORS", "run_plan", "fence", "time_out", "copy"]

run_plan, fence, time_out, copy = bound(CLIENT)
