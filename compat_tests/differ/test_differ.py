"""One test per conversation and version: the conversation runs against Apache Kafka and
kafkalite, each with fresh resource names, and the normalised answers must be equal field by
field, except for the differences compat_tests/differ/known.py accepts with a reason."""

from __future__ import annotations

import pytest

from .conversations import CONVERSATIONS
from .core import common_versions, compare, run
from .known import accepted

CASES = [pytest.param(name, end, id=f"{name.replace(' ', '-')}-{end}")
         for name in CONVERSATIONS for end in ("lowest", "highest")]


@pytest.fixture(scope="session")
def versions(reference_bootstrap, subject_bootstrap) -> dict[int, tuple[int, int]]:
    return common_versions(reference_bootstrap, subject_bootstrap)


@pytest.mark.parametrize("name,end", CASES)
def test_conversation(name, end, reference_bootstrap, subject_bootstrap, versions):
    conv = CONVERSATIONS[name]
    lo, hi = versions[conv.api_key]
    version = lo if end == "lowest" else hi

    def fn(c):
        c.v = version
        conv.fn(c)

    tag = f"{conv.api_key}v{version}"
    kafka = run(fn, reference_bootstrap, conv.labels, tag)
    ours = run(fn, subject_bootstrap, conv.labels, tag)
    result = compare(kafka, ours)
    unexpected = [d for d in result.differences if accepted(name, d.path) is None]
    assert result.fields > 0
    assert not unexpected, f"{len(unexpected)} of {result.fields} fields differ:\n" + "\n".join(map(str, unexpected))
