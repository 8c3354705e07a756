"""The fuzz targets behind `python -m fault_tests.fuzz` (imported under atheris
instrumentation there, so that coverage of protocol/, broker/ and storage/ guides it).

Inputs are parsed by hand (not FuzzedDataProvider) so that seeds can be written in the same
layout and a kept crashing input stays readable.
"""

from __future__ import annotations

import logging
import os
import struct
import tempfile
import threading
from pathlib import Path

import trio

from kafkalite.protocol.apis import API_TABLE
from kafkalite.protocol.messages import request_type
from kafkalite.broker.produce_validation import InvalidRecord, validate_produce_batches
from kafkalite.protocol.batch import iter_batches
from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.protocol.batch_patches import rewrite_crc
from kafkalite.storage import LogConfig, PartitionLog

# ------------------------------------------------------------------------------------------------
# frames: socket bytes -> serve_connection on an in-process broker
# ------------------------------------------------------------------------------------------------

# how long one connection may take; requests that legitimately wait (Fetch max_wait_ms, a
# JoinGroup waiting for its rebalance) are cut here and counted, not failed
CONNECTION_TIME = 0.25


class ProblemLog(logging.Handler):
    """Collects what a healthy broker never logs: tracebacks and error-level lines."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.problems: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.problems.append(self.format(record))


class FakeSocket:
    """The part of a trio socket FrameReader and serve_connection use: the client's bytes
    arrive in chunks of `chunk` bytes, then end of stream."""

    def __init__(self, data: bytes, chunk: int):
        self.data = memoryview(data)
        self.chunk = max(1, chunk)
        self.pos = 0

    def getpeername(self):
        return ("127.0.0.1", 9)

    async def recv_into(self, buf, nbytes: int = 0) -> int:
        await trio.lowlevel.checkpoint()
        n = min(len(buf), self.chunk, len(self.data) - self.pos)
        buf[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


class FakeStream:
    def __init__(self, data: bytes, chunk: int):
        self.socket = FakeSocket(data, chunk)
        self.sent = 0
        self.closed = False

    async def send_all(self, data) -> None:
        await trio.lowlevel.checkpoint()
        self.sent += len(data)

    async def aclose(self) -> None:
        self.closed = True


class InProcessBroker:
    """broker.server.serve in a trio loop on a thread of its own."""

    def __init__(self):
        from kafkalite.broker.settings.broker_config import BrokerConfig
        from kafkalite.broker.settings.listeners import Listener
        self.dir = Path(tempfile.mkdtemp(prefix="fuzz-broker-"))
        self.config = BrokerConfig(data_dir=self.dir, listeners=[Listener("PLAINTEXT", "127.0.0.1", 0)])
        self.problems = ProblemLog()
        root = logging.getLogger("kafkalite")
        root.setLevel(logging.INFO)
        root.propagate = False          # the fuzzer's output stays readable
        root.addHandler(self.problems)
        self.ready = threading.Event()
        self.thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)
        self.thread.start()
        if not self.ready.wait(30):
            raise RuntimeError("in-process broker did not start")
        self.waits = 0

    async def _main(self):
        from kafkalite.broker.server import serve
        self.token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self.broker = await nursery.start(serve, self.config)
            self.listener = self.broker.listeners[0]
            self.ready.set()
            await trio.sleep_forever()

    async def _drive(self, data: bytes, chunk: int) -> FakeStream:
        from kafkalite.broker.connection import serve_connection
        stream = FakeStream(data, chunk)
        with trio.move_on_after(CONNECTION_TIME) as scope:
            await serve_connection(self.broker, stream, self.listener)
        if scope.cancelled_caught:
            self.waits += 1
        elif not stream.closed:
            raise AssertionError("serve_connection returned without closing the connection")
        return stream

    def connection(self, data: bytes, chunk: int) -> None:
        del self.problems.problems[:]
        trio.from_thread.run(self._drive, data, chunk, trio_token=self.token)
        if self.problems.problems:
            raise AssertionError("broker logged a problem:\n" + "\n".join(self.problems.problems))


_API_KEYS = sorted(API_TABLE)   # filled once the handlers are loaded (see setup)


def frame_for(api_key: int, version: int, body: bytes, correlation_id: int = 7) -> bytes:
    """Size prefix + request header (v1, or v2 with empty tagged fields) + body."""
    head = struct.pack(">hhih", api_key, version, correlation_id, 4) + b"fuzz"
    if request_type(api_key, version).__flexible__:
        head += b"\0"
    payload = head + body
    return struct.pack(">i", len(payload)) + payload


def decode_frames_input(data: bytes) -> tuple[bytes, int]:
    """Layout: mode, chunk, api selector (2), version selector, body.
    mode % 4 == 0: the bytes after the first two go to the socket as they are;
    1: one request frame for the selected API and version; 2: that frame twice (the second
    after the first is answered); 3: the frame followed by raw bytes (a torn second frame)."""
    if len(data) < 5:
        return bytes(data), 7
    mode, chunk = data[0] % 4, data[1] * 16 + 1
    if mode == 0:
        return bytes(data[2:]), chunk
    keys = _API_KEYS
    api_key = keys[int.from_bytes(data[2:4], "big") % len(keys)]
    rng = API_TABLE[api_key]
    version = rng.min_version + data[4] % (rng.max_version - rng.min_version + 1)
    body = bytes(data[5:])
    frame = frame_for(api_key, version, body)
    if mode == 2:
        frame = frame + frame_for(api_key, version, body, 8)
    elif mode == 3:
        frame = frame + body[: len(body) // 2]
    return frame, chunk


_broker: InProcessBroker | None = None


def fuzz_frames(data: bytes) -> None:
    payload, chunk = decode_frames_input(data)
    if len(data) >= 5 and data[0] % 4 == 1:
        check_length_walk_agrees_with_kio(payload[4:])
    _broker.connection(payload, chunk)


def check_length_walk_agrees_with_kio(frame: bytes) -> None:
    """The length walk in protocol.messages must never refuse what kio reads: when it refuses a
    request whose arrays are small enough for kio to try safely, kio must fail too."""
    from kafkalite.protocol import messages
    header, pos = messages.peek_header(frame)
    rtype = request_type(header.api_key, header.api_version)
    try:
        if rtype.__flexible__:
            pos = messages._skip_tagged_fields(frame, pos)
        messages._check_lengths(rtype, frame, pos)
        return
    except messages.MalformedRequest as exc:
        refusal = str(exc)
    # kio may abort the process on what the walk refused (that is why the walk exists), so it
    # reads the frame in a forked child with its address space capped
    pid = os.fork()
    if pid == 0:
        import resource
        import signal
        # the child dies quietly: libFuzzer's crash handlers are for the parent only
        for sig in (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE):
            signal.signal(sig, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        try:
            messages._reader(rtype)(frame, pos)
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        raise AssertionError(f"length walk refused a {rtype.__name__} v{header.api_version} kio reads: {refusal}")


def frames_seed(api_key: int, version: int, body: bytes, mode: int = 1) -> bytes:
    keys = _API_KEYS
    rng = API_TABLE[api_key]
    return bytes([mode, 255]) + keys.index(api_key).to_bytes(2, "big") + bytes([version - rng.min_version]) + body


def _frames_seeds() -> list[bytes]:
    """A valid request of a few APIs, as real clients send them."""
    import io
    from kio.serial import entity_writer
    import kio.schema.api_versions.v3.request as av3
    import kio.schema.metadata.v12.request as md12
    import kio.schema.produce.v9.request as pr9
    import kio.schema.find_coordinator.v4.request as fc4
    import kio.schema.create_topics.v7.request as ct7
    import datetime
    from kio.static.primitive import i32, i16

    def enc(req) -> bytes:
        buf = io.BytesIO()
        entity_writer(type(req))(buf, req)
        return buf.getvalue()

    reqs = [
        av3.ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"),
        md12.MetadataRequest(topics=None, allow_auto_topic_creation=True, include_topic_authorized_operations=False),
        ct7.CreateTopicsRequest(topics=(ct7.CreatableTopic(name="t", num_partitions=i32(2), replication_factor=i16(1),
                                                           assignments=(), configs=()),),
                                timeout=datetime.timedelta(seconds=1), validate_only=False),
        fc4.FindCoordinatorRequest(key_type=0, coordinator_keys=("g",)),
    ]
    batch = bytes(build_batch([Record(b"k", b"v", (), 1)], timestamp_ms=None))
    reqs.append(pr9.ProduceRequest(transactional_id=None, acks=i16(1), timeout=datetime.timedelta(seconds=1),
                                   topic_data=(pr9.TopicProduceData(name="t", partition_data=(
                                       pr9.PartitionProduceData(index=i32(0), records=batch),)),)))
    seeds = []
    for r in reqs:
        key, ver = type(r).__api_key__, type(r).__version__
        if key in API_TABLE and API_TABLE[key].serves(ver):
            seeds.append(frames_seed(key, ver, enc(r)))
    return seeds


# ------------------------------------------------------------------------------------------------
# records: the produce-path validator, then append and read back
# ------------------------------------------------------------------------------------------------

_records_log: PartitionLog | None = None


def fuzz_records(data: bytes) -> None:
    """Layout: flags, batch bytes. Flag bit 0: recompute the CRC after mutation, so that the
    fuzzer gets past the checksum to the fields behind it."""
    if not data:
        return
    buf = bytearray(data[1:])
    if data[0] & 1 and len(buf) >= 61:
        rewrite_crc(buf, 0)
    buf = bytes(buf)
    try:
        validate_produce_batches(buf)
    except InvalidRecord:
        return
    # accepted: Kafka would append it, so the log must take it and give it back unchanged
    # (apart from the base offset and partition leader epoch the broker stamps, outside the CRC)
    try:
        decode_records(buf)
    except Exception:
        pass    # only compacted topics look inside; produce_validation.check_topic_policy refuses there
    plog = _records_log
    info = plog.append(bytearray(buf), now_ms=1)
    back = bytes(plog.read(info.base_offset, len(buf) + 1))
    if back[16:] != buf[16:] or back[8:12] != buf[8:12] or len(back) != len(buf):
        raise AssertionError(f"appended {buf[:64]!r}... read back {back[:64]!r}...")
    for _pos, _h in iter_batches(back, check_crc=True):
        pass


def _records_seeds() -> list[bytes]:
    from kafkalite.protocol.batch import COMPRESSION_GZIP
    seeds = [
        build_batch([Record(b"k", b"v", (), 1)], timestamp_ms=1),
        build_batch([Record(None, b"value" * 20, (("h", b"x"),), 5), Record(b"a", None, (), 6)], timestamp_ms=1),
        build_batch([Record(b"k", b"v", (), 1)], producer_id=5, producer_epoch=0, base_sequence=0, timestamp_ms=1),
        build_batch([Record(b"k", b"v", (), 1)], producer_id=5, producer_epoch=0, base_sequence=0,
                    transactional=True, timestamp_ms=1),
        build_batch([Record(b"k", b"v" * 50, (), 1)] * 3, compression=COMPRESSION_GZIP, timestamp_ms=1),
    ]
    return [b"\x01" + bytes(s) for s in seeds] + [b"\x00" + bytes(s) for s in seeds]


# ------------------------------------------------------------------------------------------------
# recovery: a corrupted segment file -> PartitionLog.open
# ------------------------------------------------------------------------------------------------

_recovery_dir: Path | None = None
_ORIGINAL: bytes = b""
_BATCH_ENDS: list[int] = []
_BATCH_BASES: list[int] = []


def _build_original() -> None:
    global _ORIGINAL
    out = bytearray()
    offset = 0
    for i, n in enumerate((1, 3, 1, 5, 2, 1)):
        recs = [Record(f"k{i}".encode(), f"v{i}-{j}".encode() * (i + 1), (), 1000 + i) for j in range(n)]
        b = build_batch(recs, base_offset=offset, timestamp_ms=1000)
        _BATCH_BASES.append(offset)
        out += b
        _BATCH_ENDS.append(len(out))
        offset += n
    _ORIGINAL = bytes(out)


def corrupt(original: bytes, data: bytes) -> bytes:
    """Layout: (op, position (2), length, bytes)... repeated; op % 4: overwrite, insert,
    delete, cut the file at the position."""
    out = bytearray(original)
    i = 0
    while i + 4 <= len(data) and i < 64:
        op = data[i] % 4
        pos = int.from_bytes(data[i + 1 : i + 3], "big") % (len(out) + 1)
        n = data[i + 3] % 17
        chunk = bytes(data[i + 4 : i + 4 + n])
        i += 4 + len(chunk)
        if op == 0:
            out[pos : pos + len(chunk)] = chunk
        elif op == 1:
            out[pos:pos] = chunk
        elif op == 2:
            del out[pos : pos + max(n, 1)]
        else:
            del out[pos:]
    return bytes(out)


def fuzz_recovery(data: bytes) -> None:
    damaged = corrupt(_ORIGINAL, data)
    d = _recovery_dir
    for p in d.iterdir():
        p.unlink()
    (d / "00000000000000000000.log").write_bytes(damaged)
    first_diff = next((i for i, (a, b) in enumerate(zip(_ORIGINAL, damaged)) if a != b),
                      min(len(_ORIGINAL), len(damaged)))
    intact = sum(1 for end in _BATCH_ENDS if end <= first_diff)
    plog = PartitionLog.open(d, LogConfig())      # no clean-shutdown marker: full recovery
    try:
        kept = (d / "00000000000000000000.log").read_bytes()
        # every batch before the first damaged one survives, byte for byte
        keep_at_least = _BATCH_ENDS[intact - 1] if intact else 0
        if kept[:keep_at_least] != _ORIGINAL[:keep_at_least]:
            raise AssertionError(f"recovery lost intact batches: kept {len(kept)} bytes, "
                                 f"{intact} intact batches end at {keep_at_least}")
        # and what is kept is whole, valid batches with increasing offsets
        nxt = 0
        for _pos, h in iter_batches(kept, check_crc=True):
            f = h.fields()
            if f.base_offset < nxt:
                raise AssertionError(f"kept a batch at offset {f.base_offset} below {nxt}")
            nxt = f.base_offset + f.last_offset_delta + 1
        if plog.log_end_offset != max(nxt, 0) and kept:
            raise AssertionError(f"log end offset {plog.log_end_offset} != {nxt}")
        if intact and plog.log_end_offset < _BATCH_BASES[intact - 1] + 1:
            raise AssertionError("log end offset below the intact batches")
        # everything kept reads back
        off = plog.log_start_offset
        while off < plog.log_end_offset:
            chunk = plog.read(off, 1 << 16)
            if not len(chunk):
                raise AssertionError(f"read at {off} returned nothing below the end {plog.log_end_offset}")
            last = None
            for _pos, h in iter_batches(bytes(chunk), check_crc=True):
                f = h.fields()
                last = f.base_offset + f.last_offset_delta + 1
            off = last
        # and it takes new data
        plog.append(build_batch([Record(b"n", b"new", (), 5)], timestamp_ms=5), now_ms=5)
    finally:
        plog.close()


def _recovery_seeds() -> list[bytes]:
    seeds = [b"", bytes([0, 0, 30, 4, 1, 2, 3, 4]), bytes([3, 0, 100, 0]), bytes([1, 0, 0, 3, 9, 9, 9]),
             bytes([2, 1, 0, 8])]
    for end in _BATCH_ENDS[:-1]:
        seeds.append(bytes([0]) + end.to_bytes(2, "big") + bytes([2, 0x7F, 0xFF]))   # huge length field
    return seeds


# ------------------------------------------------------------------------------------------------

def setup(target: str) -> None:
    global _broker, _records_log, _recovery_dir, _API_KEYS
    if target == "frames":
        _broker = InProcessBroker()
        _API_KEYS = sorted(API_TABLE)
    elif target == "records":
        d = Path(tempfile.mkdtemp(prefix="fuzz-records-"))
        _records_log = PartitionLog.open(d, LogConfig(segment_bytes=1 << 20))
    elif target == "recovery":
        _recovery_dir = Path(tempfile.mkdtemp(prefix="fuzz-recovery-"))
        if not _ORIGINAL:
            _build_original()


def write_seeds(target: str, directory: Path) -> None:
    if target == "frames":
        from kafkalite.broker.handlers import load_all
        load_all()
        global _API_KEYS
        _API_KEYS = sorted(API_TABLE)
        seeds = _frames_seeds()
    elif target == "records":
        seeds = _records_seeds()
    else:
        if not _ORIGINAL:
            _build_original()
        seeds = _recovery_seeds()
    for i, s in enumerate(seeds):
        (directory / f"seed-{i}").write_bytes(s)


TARGET_FUNCTIONS = {"frames": fuzz_frames, "records": fuzz_records, "recovery": fuzz_recovery}
