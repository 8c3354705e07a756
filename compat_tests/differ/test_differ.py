"""One test per conversation and end of the version ranges: the conversation runs against
Apache Kafka and kafkalite, each with fresh resource names and every API at the lowest (or the
highest) version both brokers serve, and the normalised answers must be equal field by
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
    tag = f"{conv.api_key}{end[0]}"
    kafka = run(conv.fn, reference_bootstrap, conv.labels, tag, api_key=conv.api_key, end=end, versions=versions)
    ours = run(conv.fn, subject_bootstrap, conv.labels, tag, api_key=conv.api_key, end=end, versions=versions)
    result = compare(kafka, ours)
    unexpected = [d for d in result.differences if accepted(name, d.path) is None]
    assert result.fields > 0
    assert not unexpected, f"{len(unexpected)} of {result.fields} fields differ:\n" + "\n".join(map(str, unexpected))
