"""Each handler module's opening docstring states the versions `@api` declares for its APIs."""

from __future__ import annotations

import re
import sys

from kafkalite.broker.handlers import HANDLERS, handler_table, load_all
from kafkalite.protocol.apis import API_TABLE


def _stated_range(doc: str, key: int) -> tuple[int, int] | None:
    """The range the docstring gives right after "(key N)" or "(N)": "v3-v13", "v0-v1", "v0"."""
    m = re.search(rf"\(\s*(?:key\s+)?{key}\s*\)[,:]?\s*v(\d+)(?:\s*-\s*v?(\d+))?", doc)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2) or m.group(1))


def test_every_api_is_stated_in_its_module_docstring_with_the_declared_range() -> None:
    load_all()
    wrong = []
    for key, rng in sorted(API_TABLE.items()):
        module = sys.modules[HANDLERS[key].__module__]
        stated = _stated_range(module.__doc__ or "", key)
        if stated != (rng.min_version, rng.max_version):
            wrong.append(f"{module.__name__}: {rng.name} ({key}) declared v{rng.min_version}-v{rng.max_version}, "
                         f"the docstring says {'nothing' if stated is None else 'v%d-v%d' % stated}")
    assert not wrong, "\n".join(wrong)


def test_the_table_names_each_handler_by_key() -> None:
    rows = {key: (name, versions, where) for key, name, versions, where in handler_table()}
    assert set(rows) == set(API_TABLE)
    assert rows[0] == ("Produce", f"v3-v{API_TABLE[0].max_version}", "kafkalite.broker.handlers.produce.handle")
    assert rows[26][0] == "EndTxn" and rows[26][2].startswith("kafkalite.broker.handlers.transactions.")


def test_the_range_reader_reads_the_forms_the_docstrings_use() -> None:
    assert _stated_range("Produce (key 0), v3-v13 (advertised", 0) == (3, 13)
    assert _stated_range("- JoinGroup (11) v0-v9, SyncGroup (14) v0-v5", 14) == (0, 5)
    assert _stated_range("ListPartitionReassignments (46) v0:", 46) == (0, 0)
    assert _stated_range("Fetch (key 1), v4-v18", 2) is None
