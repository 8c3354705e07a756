"""Broker settings from server.properties files and KAFKALITE_* environment variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.broker.settings.broker_config import BrokerConfig
from kafkalite.broker.settings.broker_keys import BROKER_KEYS, UnknownConfig
from kafkalite.broker.settings.listeners import Listener
from kafkalite.broker.settings.sources import env_name, env_values, parse_properties


# --- Java properties syntax ---------------------------------------------------------------------

def test_properties_separators_and_comments():
    text = """
# a comment
! also a comment
   # indented comment
num.partitions=3
auto.create.topics.enable : false
log.retention.ms 1000
message.max.bytes   =   2048
cluster.id=
"""
    assert parse_properties(text) == {
        "num.partitions": "3",
        "auto.create.topics.enable": "false",
        "log.retention.ms": "1000",
        "message.max.bytes": "2048",
        "cluster.id": "",
    }


def test_properties_line_continuation_strips_leading_whitespace():
    text = "listeners=A://127.0.0.1:9092,\\\n        B://127.0.0.1:9093\n"
    assert parse_properties(text) == {"listeners": "A://127.0.0.1:9092,B://127.0.0.1:9093"}


def test_properties_even_backslashes_do_not_continue():
    text = "a=x\\\\\nb=y\n"
    assert parse_properties(text) == {"a": "x\\", "b": "y"}


def test_properties_escapes_in_keys_and_values():
    text = "key\\ with\\=odd\\:chars = v\\u00e9\\tz\nwin=a\\\\b\r\nsecond=sep=inside\n"
    assert parse_properties(text) == {"key with=odd:chars": "vé\tz", "win": "a\\b", "second": "sep=inside"}


def test_properties_one_separator_only():
    assert parse_properties("a==b\nc = : d\n") == {"a": "=b", "c": ": d"}


def test_properties_comment_ending_in_backslash_does_not_continue():
    assert parse_properties("# note \\\nkey=value\n") == {"key": "value"}


def test_properties_last_line_continued_at_eof():
    assert parse_properties("key=abc\\") == {"key": "abc"}


# --- environment ------------------------------------------------------------------------------

def test_env_name_of_every_key_is_unique_and_maps_back():
    names = {env_name(k): k for k in BROKER_KEYS}
    assert len(names) == len(BROKER_KEYS)
    assert env_name("num.partitions") == "KAFKALITE_NUM_PARTITIONS"
    assert env_values({n: "1" for n in names}) == {k: "1" for k in BROKER_KEYS}


def test_env_values_reads_only_the_prefix_and_skips_reserved():
    env = {"KAFKALITE_NUM_PARTITIONS": "3", "KAFKALITE_PORT": "9093", "NUM_PARTITIONS": "7",
           "KAFKALITE_LISTENERS": "A://h:1", "PATH": "/bin"}
    assert env_values(env, reserved={"KAFKALITE_PORT"}) == {"num.partitions": "3", "listeners": "A://h:1"}


def test_env_values_reports_an_unknown_variable_with_a_suggestion():
    with pytest.raises(UnknownConfig, match="KAFKALITE_NUM_PARTITON.*did you mean KAFKALITE_NUM_PARTITIONS"):
        env_values({"KAFKALITE_NUM_PARTITON": "3"})


# --- values --------------------------------------------------------------------------------------

def test_unknown_key_is_an_error_with_a_hint(tmp_path: Path):
    with pytest.raises(UnknownConfig, match="did you mean 'num.partitions'"):
        BrokerConfig(data_dir=tmp_path, listeners=[], values={"num.partition": "3"})
    with pytest.raises(UnknownConfig, match="--data-dir"):
        BrokerConfig(data_dir=tmp_path, listeners=[], values={"log.dirs": "/x"})


def test_bad_value_names_the_key(tmp_path: Path):
    with pytest.raises(ValueError, match="num.partitions"):
        BrokerConfig(data_dir=tmp_path, listeners=[], values={"num.partitions": "three"})


def test_values_are_parsed_by_type(tmp_path: Path):
    c = BrokerConfig(data_dir=tmp_path, listeners=[],
                     values={"num.partitions": "3", "auto.create.topics.enable": "false", "fsync": "ALWAYS"})
    assert c["num.partitions"] == 3
    assert c["auto.create.topics.enable"] is False
    assert c["fsync"] == "always"
    assert c["group.initial.rebalance.delay.ms"] == 0


# --- listener syntax ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("PLAINTEXT://127.0.0.1:9092", Listener("PLAINTEXT", "127.0.0.1", 9092)),
    ("internal://kafka:19092", Listener("INTERNAL", "kafka", 19092)),
    ("[::1]:0", Listener("PLAINTEXT", "::1", 0)),
    ("EXTERNAL://[::]:9092", Listener("EXTERNAL", "::", 9092)),
    ("PLAINTEXT://:9092", Listener("PLAINTEXT", "", 9092)),
])
def test_listener_parse(text, expected):
    assert Listener.parse(text) == expected


@pytest.mark.parametrize("text", ["PLAINTEXT://host", "host:port", "A://h:99999", "A B://h:1", "A://[::1:9092"])
def test_listener_parse_rejects(text):
    with pytest.raises(ValueError):
        Listener.parse(text)


def test_listener_list_and_address():
    ls = Listener.parse_list("A://127.0.0.1:1, B://[::1]:2,")
    assert [l.address() for l in ls] == ["127.0.0.1:1", "[::1]:2"]
    assert [l.name for l in ls] == ["A", "B"]
