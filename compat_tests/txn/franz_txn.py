"""Transactions through franz (compat_tests/go, see go_txn.py)."""

from __future__ import annotations

from functools import partial

from compat_tests.txn import go_txn

CLIENT = "franz"
# The Kafka error code the client surfaces (godriver reports its name): the fenced producer's next
# Produce carries the old epoch (INVALID_PRODUCER_EPOCH, which the client does not translate as the
# Java client does); committing after the broker aborted a timed-out transaction is PRODUCER_FENCED.
FENCED_ERRORS = {"INVALID_PRODUCER_EPOCH"}
TIMEOUT_ERRORS = {"INVALID_TXN_STATE"}

run_plan = partial(go_txn.run_plan, CLIENT)
fence = partial(go_txn.fence, CLIENT)
time_out = partial(go_txn.time_out, CLIENT)
copy = partial(go_txn.copy, CLIENT)
