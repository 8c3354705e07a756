"""The consume-transform-produce checker (checker.check_ctp) on hand-made histories: a clean one
passes, and each anomaly is caught in a history made to contain exactly that anomaly."""

from __future__ import annotations

import pytest

from compat_tests.jepsen.checker import check_ctp

pytestmark = pytest.mark.jepsen


class H:
    """A ctp history: the input (partition -> values at offsets 0, 1, ...), transactions of
    records [partition, offset, value, output offset], the committed output and offsets."""

    def __init__(self, inputs: dict[int, list[int]]):
        self.inputs = inputs
        self.ops: list[dict] = []
        self.output: dict[int, list[list[int]]] = {p: [] for p in inputs}
        self.offsets = {p: 0 for p in inputs}

    def txn(self, process, records, type_="ok", read=True):
        """records: (partition, offset) of the input; read: the output holds them (committed)."""
        rows = []
        for p, o in records:
            out = len(self.output[p]) + sum(len(op["value"]) for op in self.ops if op["type"] == "fail")
            rows.append([p, o, self.inputs[p][o], out])
            if read:
                self.output[p].append([out, p, o, self.inputs[p][o]])
                self.offsets[p] = max(self.offsets[p], o + 1)
        i = len(self.ops)
        self.ops.append({"index": i, "process": process, "type": "invoke", "f": "ctp", "value": rows})
        self.ops.append({"index": i + 1, "process": process, "type": type_, "f": "ctp", "value": rows})
        return self

    def history(self, **overrides):
        finals = {"input": {str(p): [[o, v] for o, v in enumerate(vs)] for p, vs in self.inputs.items()},
                  "output": {str(p): rows for p, rows in self.output.items()},
                  "offsets": {str(p): o for p, o in self.offsets.items()}}
        finals.update(overrides)
        n = len(self.ops)
        return self.ops + [{"index": n + i, "process": "final", "type": "ok", "f": f, "value": v}
                           for i, (f, v) in enumerate(finals.items())]


def clean() -> H:
    return (H({0: [1, 3, 5], 1: [2, 4]})
            .txn(0, [(0, 0), (1, 0)])
            .txn(1, [(0, 1), (1, 1)], type_="fail", read=False)   # killed: records written, not committed
            .txn(2, [(0, 1), (1, 1)])                             # the batch again, by another worker
            .txn(2, [(0, 2)], type_="info"))                      # commit outcome unknown, committed


def test_a_clean_history_passes():
    r = check_ctp(clean().history())
    assert r.valid, r.anomalies
    assert r.stats["ok"] == 2 and r.stats["fail"] == 1 and r.stats["info"] == 1 and r.stats["reads"] == 5


def test_duplicate_output_and_its_offsets():
    h = clean()
    h.output[0].append([9, 0, 1, 3])  # input 0/1 written again after 0/2
    assert set(check_ctp(h.history()).anomalies) == {"duplicate-output", "nonmonotonic-output"}


def test_lost_input_below_the_committed_offset():
    h = clean()
    h.output[1] = h.output[1][:1]  # 1/1 is gone, its offset committed
    kinds = set(check_ctp(h.history()).anomalies)
    assert kinds == {"lost-input", "lost-commit"}


def test_output_beyond_the_committed_offsets():
    h = clean()
    assert set(check_ctp(h.history(offsets={"0": 2, "1": 2})).anomalies) == {"output-beyond-offsets"}


def test_output_of_an_aborted_transaction():
    """A worker killed before it asked to commit, yet its records are in the committed output."""
    h = H({0: [1]}).txn(0, [(0, 0)], type_="fail")  # read=True: the output holds it at offset 0
    assert set(check_ctp(h.history()).anomalies) == {"aborted-output"}


def test_partial_commit_of_an_unknown_transaction():
    h = H({0: [1, 3], 1: [2]}).txn(0, [(0, 0), (1, 0)], type_="info")
    h.output[1] = []
    h.offsets[1] = 0
    assert set(check_ctp(h.history()).anomalies) == {"partial-commit"}


def test_phantom_output():
    h = clean()
    h.output[1][0][3] = 99  # names input 1/0 with another value
    assert set(check_ctp(h.history()).anomalies) == {"phantom-output", "lost-commit"}
