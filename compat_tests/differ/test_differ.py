"""One test per conversation and end of the version ranges: the conversation runs against
Apache Kafka and kafkalite, each with fresh resource names and every API at the lowest (or the
highest) version both brokers serve, and the normalised answers must be equal field by
field, except for the differences compat_tests/differ/known.py accepts with a reason."""

from __future__ import annotations

import pytest

from . import admin_conversations  # noqa: F401  (registers its conversations)
from .conversations import CONVERSATIONS
from .core import assert_alike, common_versions

CASES = [pytest.param(name, end, id=f"{name.replace(' ', '-')}-{end}")
         for name in CONVERSATIONS for end in ("lowest", "highest")]


@pytest.fixture(scope="module")
def versions(reference_bootstrap, subject_bootstrap) -> dict[int, tuple[int, int]]:
    return common_versions(reference_bootstrap, subject_bootstrap)


@pytest.mark.parametrize("name,end", CASES)
def test_conversation(name, end, reference_bootstrap, subject_bootstrap, versions):
    assert_alike(name, CONVERSATIONS[name], reference_bootstrap, subject_bootstrap, end, versions)
