"""Kafka's Topic.validate, owned by broker.cluster.topic_name_error for every path that takes a
topic name (CreateTopics, configs, Metadata's auto-creation, streams groups, --seed)."""

import pytest

from kafkalite.broker.cluster import topic_name_error


@pytest.mark.parametrize("name", ["a", "a.b_c-D9", "x" * 249, "..."])
def test_legal_names(name: str) -> None:
    assert topic_name_error(name) is None


@pytest.mark.parametrize("name, message", [
    (None, "Topic name is invalid: the empty string is not allowed"),
    ("", "Topic name is invalid: the empty string is not allowed"),
    (".", "Topic name is invalid: '.' is not allowed"),
    ("..", "Topic name is invalid: '..' is not allowed"),
    ("x" * 250, f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed length 249"),
    ("bad/name", "Topic name is invalid: 'bad/name' contains one or more characters other than ASCII "
                 "alphanumerics, '.', '_' and '-'"),
    # a trailing newline and non-ASCII letters are illegal too (a `$`-anchored pattern let the first pass)
    ("name\n", "Topic name is invalid: 'name\n' contains one or more characters other than ASCII "
               "alphanumerics, '.', '_' and '-'"),
    ("naïve", "Topic name is invalid: 'naïve' contains one or more characters other than ASCII "
              "alphanumerics, '.', '_' and '-'"),
])
def test_illegal_names_get_kafkas_message(name: str | None, message: str) -> None:
    assert topic_name_error(name) == message
