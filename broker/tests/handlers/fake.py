"""The broker's state built in-process for handler tests: no process, no socket.

`in_process_broker(data_dir)` opens the same state the server opens (broker.state.open_broker)
on a temporary data dir, with the coordinators' timers running in a nursery of the test's trio
loop, and tells clients the address a listener would have (nothing listens there). `call`
builds a request from plain values (compat_tests.differ.core.request), wraps it in a
RequestContext as the connection loop does, and runs the API's handler; an answer the handler
encoded itself (Produce) is read back as a client reads it."""

from __future__ import annotations

import contextlib
import itertools
import uuid
from pathlib import Path
from typing import Any, AsyncIterator

import trio
from kio.schema.errors import ErrorCode as E

from compat_tests.differ.core import request as build_request
from kafkalite.broker.settings.broker_config import BrokerConfig
from kafkalite.broker.settings.listeners import Listener
from kafkalite.broker.context import Connection, RequestContext
from kafkalite.broker.handlers import HANDLERS, load_all
from kafkalite.broker.security import ListenerSecurity
from kafkalite.broker.state import Broker, close_broker, open_broker
from kafkalite.protocol.client import decode_response
from kafkalite.protocol.messages import EncodedBody, RequestHeader, encode_response
from kafkalite.protocol.batch import iter_batches
from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.protocol.regions import FileRegion

# what a client would be told; nothing listens there
ADVERTISED = Listener("PLAINTEXT", "127.0.0.1", 9092)


class InProcessBroker:
    """A broker's state and a way to call its handlers as one client connection would."""

    def __init__(self, broker: Broker, peer: str = "127.0.0.1:50000"):
        self.broker = broker
        self.peer = peer
        self.conn = Connection(ListenerSecurity(ADVERTISED.name))
        self._correlation = itertools.count(1)
        self._regions: list[FileRegion] = []

    def context(self, api_key: int, version: int, client_id: str | None = "handler-test") -> RequestContext:
        header = RequestHeader(api_key, version, next(self._correlation), client_id)
        return RequestContext(self.broker, header, ADVERTISED, self.peer, None, self.conn)

    async def call(self, api_key: int, version: int, **fields: Any) -> Any:
        """The handler's response to the request made of `fields` (None: no response)."""
        assert self.broker.api_ranges[api_key].serves(version), f"API {api_key} v{version} is not served"
        ctx = self.context(api_key, version)
        request = build_request(api_key, version, **fields)
        with trio.fail_after(10):
            response = await HANDLERS[api_key](ctx, request)
        # a Fetch response's records are regions of the log files, valid until released
        self._regions.extend(ctx.regions)
        if isinstance(response, EncodedBody):
            # a handler that encodes its own answer (Produce): read it back as a client would
            frame = encode_response(api_key, version, ctx.header.correlation_id, response)
            return decode_response(api_key, version, frame[4:], ctx.header.correlation_id)
        return response

    def release(self) -> None:
        for region in self._regions:
            region.release()
        self._regions.clear()


@contextlib.asynccontextmanager
async def in_process_broker(data_dir: Path, **settings: Any) -> AsyncIterator[InProcessBroker]:
    """The broker's state on `data_dir` with `settings` (Kafka's key names), its services running."""
    load_all()
    config = BrokerConfig(data_dir=data_dir, listeners=[ADVERTISED], values=settings)
    broker = open_broker(config)
    for node in broker.cluster.node_ids:
        broker.node_listeners[node] = [ADVERTISED]
        broker.node_advertised[node] = {ADVERTISED.name: ADVERTISED}
    broker.listeners.append(ADVERTISED)
    broker.advertised[ADVERTISED.name] = ADVERTISED
    fake = InProcessBroker(broker)
    try:
        async with trio.open_nursery() as nursery:
            await broker.services.start(nursery)
            try:
                yield fake
            finally:
                nursery.cancel_scope.cancel()
    finally:
        fake.release()
        close_broker(broker)


def record_values(records: bytes | None) -> list[bytes | None]:
    """The values of the data records in a Fetch response's records (control batches skipped)."""
    if not records:
        return []
    buf = records.read() if isinstance(records, FileRegion) else bytes(records)
    return [r.value for pos, header in iter_batches(buf) if not header.is_control
            for r in decode_records(buf, pos)]


# --- requests most tests make ---------------------------------------------------------------------

async def create_topic(b: InProcessBroker, name: str, partitions: int = 1) -> uuid.UUID:
    r = await b.call(19, 7, topics=[{"name": name, "num_partitions": partitions, "replication_factor": 1}],
                     timeout=10000, validate_only=False)
    assert r.topics[0].error_code == E.none, r
    return r.topics[0].topic_id


async def produce(b: InProcessBroker, topic: str, values: list[bytes], *, transactional_id: str | None = None,
                  partition: int = 0, **batch: Any) -> Any:
    """The partition response of a Produce v9 of one batch of `values`."""
    records = bytes(build_batch([Record(None, v) for v in values], **batch))
    r = await b.call(0, 9, transactional_id=transactional_id, acks=-1, timeout=10000, topic_data=[
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}])
    return r.responses[0].partition_responses[0]


async def fetch(b: InProcessBroker, topic: str, offset: int, *, read_committed: bool = False) -> Any:
    """The partition of a Fetch v12 from `offset` (no waiting)."""
    r = await b.call(1, 12, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=1 << 20,
                     isolation_level=1 if read_committed else 0, session_id=0, session_epoch=-1,
                     topics=[{"topic": topic, "partitions": [
                         {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
                          "current_leader_epoch": -1, "last_fetched_epoch": -1, "log_start_offset": -1}]}])
    assert r.error_code == E.none
    return r.responses[0].partitions[0]
