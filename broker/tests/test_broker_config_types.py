"""BrokerConfig's typed seam: a setting read as the type its key parses to, or a TypeError naming it."""

from pathlib import Path

import pytest

from kafkalite.broker.settings.broker_config import BrokerConfig
from kafkalite.broker.settings.listeners import Listener


def config(**values: object) -> BrokerConfig:
    return BrokerConfig(data_dir=Path("/nonexistent"), listeners=[Listener("PLAINTEXT", "127.0.0.1", 9092)],
                        values={k.replace("_", "."): v for k, v in values.items()})


def test_values_come_back_as_their_keys_parse_them() -> None:
    c = config(num_partitions="3", auto_create_topics_enable="false", cluster_id="c-1")
    assert c.int_of("num.partitions") == 3
    assert c.bool_of("auto.create.topics.enable") is False
    assert c.str_of("cluster.id") == "c-1"


@pytest.mark.parametrize("read, key", [("int_of", "auto.create.topics.enable"), ("bool_of", "num.partitions"),
                                       ("str_of", "node.id"), ("int_of", "cluster.id")])
def test_a_key_read_as_another_type_is_a_type_error_naming_it(read: str, key: str) -> None:
    with pytest.raises(TypeError, match=f"broker setting {key} is a"):
        getattr(config(), read)(key)


def test_an_unknown_key_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        config().int_of("no.such.key")
