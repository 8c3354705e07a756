"""The history checker on hand-made histories: a clean one passes, and each anomaly it knows is
caught in a history made to contain exactly that anomaly (and nothing else)."""

from __future__ import annotations

import json

import pytest

from compat_tests.jepsen.checker import check, report
from compat_tests.jepsen.history import read_history, write_history

pytestmark = pytest.mark.jepsen

RC, RU = "read_committed", "read_uncommitted"


class H:
    """A history builder: each call appends an invocation and its completion for one process."""

    def __init__(self):
        self.ops: list[dict] = []

    def _add(self, process, f, invoke_value, type_, value, **extra):
        t = len(self.ops)
        self.ops.append({"index": t, "time": t, "process": process, "type": "invoke", "f": f, "value": invoke_value,
                         **{k: v for k, v in extra.items() if k in ("isolation", "abort")}})
        self.ops.append({"index": t + 1, "time": t + 1, "process": process, "type": type_, "f": f, "value": value,
                         **extra})
        return self

    def txn(self, process, *mops, type="ok", isolation=RC, **extra):
        """mops: ("send", k, offset, v) or ("poll", {k: [(offset, v), ...]})."""
        inv, done = [], []
        for m in mops:
            if m[0] == "send":
                inv.append(["send", m[1], m[3]])
                done.append(["send", m[1], [m[2], m[3]]])
            else:
                inv.append(["poll"])
                done.append(["poll", {k: [list(p) for p in pairs] for k, pairs in m[1].items()}])
        return self._add(process, "txn", inv, type, done, isolation=isolation, **extra)

    def assign(self, process, keys):
        return self._add(process, "assign", keys, "ok", keys)


def kinds(h: H) -> set[str]:
    return set(check(h.ops).anomalies)


def clean() -> H:
    """Two committed transactions to keys 0 and 1 and an aborted one; readers see what they may."""
    return (H()
            .txn(0, ("send", 0, 0, 10), ("send", 0, 1, 11), ("send", 1, 0, 20))
            .txn(1, ("send", 0, 3, 12), abort=True)            # aborted on purpose (marker at 2)
            .txn(0, ("send", 0, 5, 13))                         # offset 4 is the abort marker
            .txn(2, ("poll", {0: [(0, 10), (1, 11)], 1: [(0, 20)]}))
            .txn(2, ("poll", {0: [(5, 13)]}))                  # skips only the aborted 12
            .txn(3, ("poll", {0: [(0, 10), (1, 11), (3, 12), (5, 13)]}), isolation=RU))


def test_a_clean_history_passes():
    result = check(clean().ops)
    assert result.valid, result.anomalies
    assert result.stats["acknowledged_writes"] == 4 and result.stats["reads"] == 8


def test_the_history_round_trips_through_json_lines(tmp_path):
    path = tmp_path / "history.jsonl"
    write_history(path, clean().ops)
    back = read_history(path)
    assert check(back).valid
    assert [json.dumps(op, sort_keys=True) for op in back][:2] == \
        [json.dumps(json.loads(json.dumps(op)), sort_keys=True) for op in clean().ops][:2]


def test_aborted_read_g1a():
    h = (H().txn(0, ("send", 0, 0, 10), type="fail")
         .txn(1, ("poll", {0: [(0, 10)]})))
    assert kinds(h) == {"G1a"}
    # the same read under read_uncommitted is allowed
    h2 = (H().txn(0, ("send", 0, 0, 10), type="fail")
          .txn(1, ("poll", {0: [(0, 10)]}), isolation=RU))
    assert kinds(h2) == set()


def test_aborted_read_of_an_intended_abort():
    h = (H().txn(0, ("send", 0, 0, 10), abort=True)
         .txn(1, ("poll", {0: [(0, 10)]})))
    assert kinds(h) == {"G1a"}


def test_intermediate_read_g1b_is_reported_and_allowed():
    """Allowed as on Kafka: one LSO per partition makes a transaction interleaved with an open one
    partly visible."""
    h = (H().txn(0, ("send", 0, 0, 10), ("send", 0, 2, 11))
         .txn(3, ("send", 0, 1, 30))
         .txn(1, ("poll", {0: [(0, 10)]}))
         .txn(2, ("poll", {0: [(0, 10), (1, 30), (2, 11)]})))
    result = check(h.ops)
    assert result.valid and [c["value"] for c in result.allowed["G1b"]] == [10]


def test_precommitted_read():
    h = H().txn(0, ("send", 0, 0, 10), ("poll", {0: [(0, 10)]}))
    assert kinds(h) == {"precommitted-read"}


def test_phantom_read():
    h = (H().txn(0, ("send", 0, 0, 10))
         .txn(1, ("poll", {0: [(0, 10), (1, 99)]})))
    assert kinds(h) == {"phantom-read"}


def test_inconsistent_offsets():
    h = (H().txn(0, ("send", 0, 0, 10))
         .txn(0, ("send", 0, 1, 11))
         .txn(1, ("poll", {0: [(0, 10), (1, 11)]}))
         .txn(2, ("poll", {0: [(0, 11)]}), isolation=RU))
    assert "inconsistent-offsets" in kinds(h)
    case = check(h.ops).anomalies["inconsistent-offsets"][0]
    assert case["key"] == 0 and case["offset"] == 0 and case["values"] == [10, 11]


def test_duplicate():
    h = (H().txn(0, ("send", 0, 0, 10))
         .txn(1, ("poll", {0: [(0, 10), (1, 10)]})))
    assert "duplicate" in kinds(h)
    assert check(h.ops).anomalies["duplicate"][0]["offsets"] == [0, 1]


def test_lost_write():
    h = (H().txn(0, ("send", 0, 0, 10))
         .txn(0, ("send", 0, 1, 11))
         .txn(0, ("send", 0, 2, 12))
         .txn(1, ("poll", {0: [(0, 10)]}))
         .txn(3, ("poll", {0: [(2, 12)]})))
    got = check(h.ops).anomalies
    assert set(got) == {"lost-write"}
    assert got["lost-write"][0]["value"] == 11 and got["lost-write"][0]["max_read"] == 12


def test_lost_write_of_an_indeterminate_transaction_that_was_partly_read():
    h = (H().txn(0, ("send", 0, 0, 10), ("send", 1, 0, 20), type="info")
         .txn(0, ("send", 1, 2, 21))
         .txn(1, ("poll", {0: [(0, 10)]}))
         .txn(3, ("poll", {1: [(2, 21)]})))
    # value 20 went out with 10, which was read committed: so 20 committed too, before 21
    got = check(h.ops).anomalies
    assert set(got) == {"lost-write"} and got["lost-write"][0]["value"] == 20


def test_unseen():
    h = (H().txn(0, ("send", 0, 0, 10))
         .txn(0, ("send", 1, 0, 20))
         .txn(1, ("poll", {0: [(0, 10)]})))
    got = check(h.ops).anomalies
    assert set(got) == {"unseen"} and got["unseen"][0]["value"] == 20


def test_poll_skip():
    h = (H().txn(0, ("send", 0, 0, 10), ("send", 0, 1, 11), ("send", 0, 2, 12))
         .txn(1, ("poll", {0: [(0, 10)]}))
         .txn(1, ("poll", {0: [(2, 12)]}))
         .txn(2, ("poll", {0: [(0, 10), (1, 11), (2, 12)]})))
    got = check(h.ops).anomalies
    assert "poll-skip" in got and got["poll-skip"][0]["skipped"] == [11]


def test_poll_skip_is_forgiven_after_an_assign_or_a_rebalance():
    base = H().txn(0, ("send", 0, 0, 10), ("send", 0, 1, 11), ("send", 0, 2, 12)).txn(1, ("poll", {0: [(0, 10)]}))
    h = base.assign(1, [1]).assign(1, [0]).txn(1, ("poll", {0: [(2, 12)]})).txn(2, ("poll", {0: [(0, 10), (1, 11), (2, 12)]}))
    assert "poll-skip" not in kinds(h)
    h2 = (H().txn(0, ("send", 0, 0, 10), ("send", 0, 1, 11), ("send", 0, 2, 12))
          .txn(1, ("poll", {0: [(0, 10)]}))
          .txn(1, ("poll", {0: [(2, 12)]}), rebalance_log=[{"keys": [0]}])
          .txn(2, ("poll", {0: [(0, 10), (1, 11), (2, 12)]})))
    assert "poll-skip" not in kinds(h2)


def test_nonmonotonic_poll():
    h = (H().txn(0, ("send", 0, 0, 10), ("send", 0, 1, 11))
         .txn(1, ("poll", {0: [(0, 10), (1, 11)]}))
         .txn(1, ("poll", {0: [(1, 11)]})))
    assert kinds(h) == {"nonmonotonic-poll"}


def test_internal_poll_skip_and_nonmonotonic_poll():
    h = (H().txn(0, ("send", 0, 0, 10), ("send", 0, 1, 11), ("send", 0, 2, 12))
         .txn(1, ("poll", {0: [(0, 10), (2, 12)]}))
         .txn(2, ("poll", {0: [(0, 10), (1, 11), (2, 12)]})))
    assert "int-poll-skip" in kinds(h)
    h2 = (H().txn(0, ("send", 0, 0, 10), ("send", 0, 1, 11))
          .txn(1, ("poll", {0: [(0, 10), (1, 11), (0, 10)]})))
    assert "int-nonmonotonic-poll" in kinds(h2)


def test_nonmonotonic_send():
    h = (H().txn(0, ("send", 0, 5, 10))
         .txn(0, ("send", 0, 3, 11))
         .txn(1, ("poll", {0: [(3, 11), (5, 10)]})))
    assert kinds(h) == {"nonmonotonic-send"}


def test_internal_nonmonotonic_send():
    h = (H().txn(0, ("send", 0, 5, 10), ("send", 0, 3, 11))
         .txn(1, ("poll", {0: [(3, 11), (5, 10)]})))
    assert "int-nonmonotonic-send" in kinds(h)


def test_internal_send_skip_is_allowed():
    """Another producer's record between two sends of one transaction is Kafka's normal case."""
    h = (H().txn(0, ("send", 0, 0, 10), ("send", 0, 2, 12))
         .txn(1, ("send", 0, 1, 11))
         .txn(2, ("poll", {0: [(0, 10), (1, 11), (2, 12)]})))
    result = check(h.ops)
    assert result.valid and "int-send-skip" in result.allowed


@pytest.mark.parametrize("kind", ["G1a", "lost-write"])
def test_the_report_names_the_seed_and_shows_the_history(kind):
    if kind == "G1a":
        h = H().txn(0, ("send", 0, 0, 10), type="fail").txn(1, ("poll", {0: [(0, 10)]}))
    else:
        h = (H().txn(0, ("send", 0, 0, 10)).txn(0, ("send", 0, 1, 11))
             .txn(1, ("poll", {0: [(1, 11)]})))
    text = report(h.ops, check(h.ops), seed=1234)
    assert text.startswith("seed 1234: anomalies: " + kind)
    assert '"type":"invoke"' in text and '"process":1' in text
