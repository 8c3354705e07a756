"""Transactions through franz (compat_tests/go, see go_txn.py)."""

from __future__ import annotations

from compat_tests.txn.go_txn import FENCED_ERRORS, bound

CLIENT = "franz"
# what the client reports when it commits after the broker aborted a timed-out transaction
TIMEOUT_ERRORS = {"INVALID_TXN_STATE"}
__all__ = ["CLIENT", "FENCED_ERRORS", "TIMEOUT_ERRORS", "run_plan", "fence", "time_out", "copy"]

run_plan, fence, time_out, copy = bound(CLIENT)
