"""A one-node start answers before it opens its partitions (broker.cluster, broker.partition):
loaded partitions open on first use, their producer state replayed before anything reads it; a
worker thread and the loop that want the same partition open it once; what is never opened is
left as the last stop left it (no close, flush or config change opens it); the partitions of a
topic share one log config object, however they open; a cluster of more nodes
opens every partition at load; and the server's background pass opens the rest after the start."""

from __future__ import annotations

import threading
import time

import trio
from kio.schema.errors import ErrorCode as E

from kafkalite.broker import cluster as cluster_module
from kafkalite.broker.cluster import Cluster
from kafkalite.broker.server import serve
from kafkalite.broker.settings.broker_config import BrokerConfig
from kafkalite.broker.settings.listeners import Listener
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.records import Record, build_batch
from kafkalite.storage import PartitionLog

from .test_admin import create_topics
from .test_wire import produce

NOW = 1_700_000_000_000


def _config(tmp_path, **values) -> BrokerConfig:
    return BrokerConfig(data_dir=tmp_path, listeners=[Listener("PLAINTEXT", "127.0.0.1", 0)], values=values)


def _idempotent(pid: int, seq: int, n: int = 2) -> bytes:
    return build_batch([Record(value=b"v%d" % i) for i in range(n)], producer_id=pid, producer_epoch=0,
                       base_sequence=seq, timestamp_ms=NOW)


def _written(tmp_path, **values) -> None:
    """Topics a (3 partitions, producer 7's two batches in partition 1) and b (2), stopped cleanly."""
    c = Cluster(_config(tmp_path, **values))
    c.load()
    a = c.create_topic("a", 3)
    c.create_topic("b", 2)
    a.partitions[1].append(_idempotent(7, 0), now_ms=NOW)
    a.partitions[1].append(_idempotent(7, 2), now_ms=NOW)
    c.write_producer_snapshots()
    c.close()


def _files(tmp_path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(tmp_path)): (p.stat().st_size, p.stat().st_mtime_ns)
            for d in tmp_path.iterdir() if d.name[:2] in ("a-", "b-") for p in d.iterdir()}


def test_loaded_partitions_open_on_first_use_with_their_producer_state(tmp_path):
    _written(tmp_path)
    c = Cluster(_config(tmp_path))
    c.load()
    parts = list(c.all_partitions())
    assert len(parts) == 5 and not any(p.opened for p in parts)
    assert c.not_yet_open() == parts
    one = c.partition("a", 1)
    assert one is not None
    # the producer state is asked first: it opens the log and replays it before answering
    entry = one.producers.entries[7]
    assert one.opened and entry.last_seq == 3 and one.high_watermark == 4
    # the next batch of producer 7 follows its sequence; a repeat of the last is a duplicate
    assert one.append(_idempotent(7, 2), now_ms=NOW).duplicate
    assert one.append(_idempotent(7, 4), now_ms=NOW).base_offset == 4
    assert c.not_yet_open() == [p for p in parts if p is not one]
    c.write_producer_snapshots()
    c.close()


def test_what_is_never_opened_is_left_as_it_was(tmp_path):
    _written(tmp_path)
    before = _files(tmp_path)
    c = Cluster(_config(tmp_path))
    c.load()
    b0 = c.partition("b", 0)
    assert b0 is not None
    c.apply_broker_defaults()     # a dynamic default, as at start with stored broker configs
    for part in c.all_partitions():
        part.flush()
    c.write_producer_snapshots()
    c.close()
    assert not any(p.opened for p in c.all_partitions())
    assert _files(tmp_path) == before
    # opened later, it takes its topic's config as it is then
    c = Cluster(_config(tmp_path, **{"log.segment.bytes": 123456}))
    c.load()
    b0 = c.partition("b", 0)
    assert b0 is not None and b0.size_bytes == 0
    assert b0.log.config.segment_bytes == 123456
    c.close()


def test_a_topics_partitions_share_one_log_config_however_they_open(tmp_path):
    _written(tmp_path)
    c = Cluster(_config(tmp_path))
    c.load()
    a = c.topics["a"]
    # each opens alone (first use), reading its topic's config then: one object for all three
    configs = [a.partitions[i].log.config for i in range(3)]
    assert all(cfg is configs[0] for cfg in configs) and configs[0].retention_ms == 7 * 24 * 3600 * 1000
    assert c.topics["b"].partitions[0].log.config is not configs[0]
    # a change gives every partition the new values, again in one object; the unchanged topic
    # keeps its own
    b_config = c.topics["b"].partitions[0].log.config
    c.alter_topic_configs(a, {"retention.ms": "5000"})
    changed = [p.log.config for p in a.partitions]
    assert changed[0].retention_ms == 5000 and all(cfg is changed[0] for cfg in changed)
    c.apply_broker_defaults()
    assert all(p.log.config is changed[0] for p in a.partitions)
    assert c.topics["b"].partitions[1].log.config is b_config
    # created at once, the same
    t = c.create_topic("fresh", 4)
    assert len({id(p.log.config) for p in t.partitions}) == 1
    c.close()


def test_a_thread_and_the_loop_open_a_partition_once(tmp_path, monkeypatch):
    _written(tmp_path)
    c = Cluster(_config(tmp_path))
    c.load()
    part = c.partition("a", 1)
    assert part is not None
    opens: list[str] = []
    real_open = PartitionLog.open

    def slow_open(directory, config, **kw):   # long enough for the other thread to arrive meanwhile
        opens.append(str(directory))
        time.sleep(0.2)
        return real_open(directory, config, **kw)

    monkeypatch.setattr(cluster_module.PartitionLog, "open", staticmethod(slow_open))
    seen: list[int] = []
    threads = [threading.Thread(target=lambda: seen.append(part.high_watermark)) for _ in range(2)]
    for t in threads:
        t.start()
    seen.append(len(part.producers.entries))
    for t in threads:
        t.join(10)
    assert len(opens) == 1 and sorted(seen) == [1, 4, 4]
    c.close()


def test_more_nodes_open_every_partition_at_load(tmp_path):
    _written(tmp_path, nodes=3)
    c = Cluster(_config(tmp_path, nodes=3))
    c.load()
    assert all(p.opened for p in c.all_partitions()) and c.not_yet_open() == []
    c.close()


def test_the_server_opens_the_rest_after_the_start_and_serves_them(tmp_path):
    async def main() -> None:
        config = _config(tmp_path)
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(serve, config)
            address = broker.advertised["PLAINTEXT"].address()

            def exchange() -> None:
                with WireClient(address) as c:
                    assert [r.error_code for r in create_topics(c, {"name": "many", "partitions": 40})] == [E.none]
                    for i in range(40):
                        assert produce(c, "many", build_batch([Record(value=b"x")]), partition=i).base_offset == 0
            await trio.to_thread.run_sync(exchange)
            nursery.cancel_scope.cancel()
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(serve, config)
            with trio.fail_after(20):
                while broker.cluster.not_yet_open():
                    await trio.sleep(0.01)
            address = broker.advertised["PLAINTEXT"].address()

            def append_to_all() -> list[int]:
                with WireClient(address) as c:
                    return [produce(c, "many", build_batch([Record(value=b"y")]), partition=i).base_offset
                            for i in range(40)]
            assert await trio.to_thread.run_sync(append_to_all) == [1] * 40
            nursery.cancel_scope.cancel()

    trio.run(main)
