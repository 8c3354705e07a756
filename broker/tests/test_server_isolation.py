"""A request that fails in its handler or in encoding closes that connection only."""

from __future__ import annotations


import trio
import kio.schema.metadata.v12.request as md12

from kafkalite.broker import handlers
from kafkalite.broker.settings.broker_config import BrokerConfig
from kafkalite.broker.settings.listeners import Listener
from kafkalite.broker.server import serve
from kafkalite.protocol.client import WireClient


def test_failing_handler_and_unencodable_response_are_answered_and_touch_no_other_connection(tmp_path, monkeypatch):
    """A handler that raises, or answers what cannot be encoded, gets UNKNOWN_SERVER_ERROR on its
    open connection, as Kafka answers (broker.connection); other connections never notice."""
    async def broken_handler(ctx, request):
        raise RuntimeError("handler bug")

    class Unencodable:
        pass

    async def unencodable_handler(ctx, request):
        return Unencodable()

    async def main():
        config = BrokerConfig(data_dir=tmp_path, listeners=[Listener("PLAINTEXT", "127.0.0.1", 0)])
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(serve, config)
            address = broker.advertised["PLAINTEXT"].address()

            def exchange():
                results = []
                for fake in (broken_handler, unencodable_handler):
                    monkeypatch.setitem(handlers.HANDLERS, 3, fake)
                    with WireClient(address) as c:
                        c.send_only(md12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                         include_topic_authorized_operations=False))
                        try:
                            c.recv_frame()
                            results.append("answered")
                        except ConnectionError:
                            results.append("closed")
                monkeypatch.undo()
                with WireClient(address) as c:
                    resp = c.request(md12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                          include_topic_authorized_operations=False))
                    results.append(len(resp.brokers))
                return results

            results = await trio.to_thread.run_sync(exchange)
            nursery.cancel_scope.cancel()
        return results

    assert trio.run(main) == ["answered", "answered", 1]
