"""A topic default set as a dynamic broker config reaches the topics that exist already, at once
and after a restart, as Kafka's DynamicLogConfig reconfigures every log (a topic's own value still
wins). message.max.bytes shows it on the wire: an existing topic refuses a batch above the new
default with MESSAGE_TOO_LARGE. compat_tests/test_compaction.py shows the same for
log.cleaner.max.compaction.lag.ms on both brokers."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from compat_tests.differ.core import request
from kafkalite.broker.tests.test_admin import produce_error
from kafkalite.broker.tests.test_dynamic_broker_configs import DELETE, SET, incremental
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers

BIG = b"x" * 2000


def create(wire: WireClient, name: str, configs: dict[str, str]) -> None:
    resp = wire.request(request(19, 7, timeout=5000, validate_only=False, topics=[
        {"name": name, "num_partitions": 1, "replication_factor": 1,
         "configs": [{"name": k, "value": v} for k, v in configs.items()]}]))
    assert resp.topics[0].error_code == ErrorCode.none


def test_a_dynamic_default_reaches_existing_topics_now_and_after_a_restart(tmp_path):
    with suite_brokers.running(data_dir=tmp_path) as broker, WireClient(broker.bootstrap) as wire:
        create(wire, "inherits", {})
        create(wire, "own-value", {"max.message.bytes": "1048588"})
        assert produce_error(wire, "inherits", BIG) == ErrorCode.none
        assert incremental(wire, "", [("message.max.bytes", SET, "1000")]) == [(ErrorCode.none, None)]
        assert produce_error(wire, "inherits", BIG) == ErrorCode.message_too_large
        assert produce_error(wire, "own-value", BIG) == ErrorCode.none
    with suite_brokers.running(data_dir=tmp_path) as broker, WireClient(broker.bootstrap) as wire:
        assert produce_error(wire, "inherits", BIG) == ErrorCode.message_too_large
        assert incremental(wire, "", [("message.max.bytes", DELETE, None)]) == [(ErrorCode.none, None)]
        assert produce_error(wire, "inherits", BIG) == ErrorCode.none

