"""A failed log write or fsync answers Produce with KAFKA_STORAGE_ERROR, keeps the connection,
appends nothing, and writes work again once the disk does."""

from __future__ import annotations

import trio
from kio.schema.errors import ErrorCode

from kafkalite.broker.settings.broker_config import BrokerConfig
from kafkalite.broker.settings.listeners import Listener
from kafkalite.broker.server import serve
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import build_batch

from .disk_faults import fail_fsync_while, fill_disk_while
from .test_wire import fetch, metadata, produce, records


def _with_broker(tmp_path, values, exchange):
    async def main():
        config = BrokerConfig(data_dir=tmp_path, listeners=[Listener("PLAINTEXT", "127.0.0.1", 0)], values=values)
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(serve, config)
            result = await trio.to_thread.run_sync(exchange, broker.advertised["PLAINTEXT"].address())
            nursery.cancel_scope.cancel()
        return result
    return trio.run(main)



def _refused_while_failing(c: WireClient, switch: dict, n: int):
    """Produce `n` records to "t", then `n` more while `switch["on"]` makes the disk fail (answered
    KAFKA_STORAGE_ERROR), then `n` more once it works again: that last answer."""
    metadata(c, "t")
    assert produce(c, "t", build_batch(records(n))).error_code == ErrorCode.none
    switch["on"] = True
    assert produce(c, "t", build_batch(records(n, n))).error_code == ErrorCode.kafka_storage_error
    switch["on"] = False
    return produce(c, "t", build_batch(records(n, 2 * n)))

def test_full_disk_on_append_is_a_storage_error_and_nothing_is_appended(tmp_path, monkeypatch):
    full = {"on": False}
    fill_disk_while(monkeypatch, full, "on")

    def exchange(address):
        with WireClient(address) as c:
            # same connection, and the failed batch left no bytes behind
            assert _refused_while_failing(c, full, 2).base_offset == 2
            p = fetch(c, "t", 0)
            assert p.high_watermark == 4
        return True

    assert _with_broker(tmp_path, {}, exchange)


def test_failed_fsync_with_fsync_always_is_not_acknowledged(tmp_path, monkeypatch):
    failing = {"on": False}
    fail_fsync_while(monkeypatch, failing, "on")

    def exchange(address):
        with WireClient(address) as c:
            assert _refused_while_failing(c, failing, 1).error_code == ErrorCode.none
        return True

    assert _with_broker(tmp_path, {"fsync": "always"}, exchange)


def test_failed_fsync_of_a_write_txn_markers_request_is_not_acknowledged(tmp_path, monkeypatch):
    """WriteTxnMarkers (kafka-transactions.sh abort) with fsync=always answers a marker only once
    it is durable: a failed fsync is KAFKA_STORAGE_ERROR, and the abort can be sent again."""
    import kio.schema.produce.v12.request as p12
    import kio.schema.write_txn_markers.v1.request as wm1

    from .test_transactions_wire import _init, _produce

    failing = {"on": False}
    fail_fsync_while(monkeypatch, failing, "on")

    def abort(c, pid, epoch):
        r = c.request(wm1.WriteTxnMarkersRequest(markers=(wm1.WritableTxnMarker(
            producer_id=pid, producer_epoch=epoch, transaction_result=False, coordinator_epoch=0,
            topics=(wm1.WritableTxnMarkerTopic(name="t", partition_indexes=(0,)),)),)))
        return r.markers[0].topics[0].partitions[0].error_code

    def exchange(address):
        with WireClient(address) as c:
            metadata(c, "t")
            _, pid, epoch = _init(c, "markers-fsync")
            assert _produce(c, p12, "markers-fsync", "t", pid, epoch, 0).error_code == ErrorCode.none
            failing["on"] = True
            assert abort(c, pid, epoch) == ErrorCode.kafka_storage_error
            failing["on"] = False
            assert abort(c, pid, epoch) == ErrorCode.none
        return True

    assert _with_broker(tmp_path, {"fsync": "always"}, exchange)
