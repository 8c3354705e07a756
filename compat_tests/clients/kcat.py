"""kcat (Debian's package; librdkafka as that package ships it) as a subprocess.

Producing: records go to kcat -P on stdin, split by random multi-byte message and key delimiters
that occur in no record; kcat prints each delivery report ("Message delivered to partition P
(offset O)") with -vv. A kcat run sends one header set to all its records and turns empty keys and
values into nulls only with -Z, so the records are sent in consecutive runs that share headers and
target partition and need -Z or not. kcat cannot set record timestamps (Unsupported).

Delivery reports carry no key, so when librdkafka's partitioner picks the partition the adapter
assigns reports to records by predicting that partitioner (consistent_random: CRC-32 of the key
modulo the partition count) and checks that the prediction matches what was delivered.

Consuming: kcat -C with a format of one text line (partition, offset, timestamp, key length, value
length, headers as kcat's "n=v" CSV) followed by the raw key and value bytes, so keys and values
are binary-safe. Header values containing ',' or '=' , or the text NULL, cannot be told apart in
kcat's output.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any

from . import start_offset
from .base import Client, Msg, ProduceResult, Unsupported

DELIVERED = re.compile(rb"Message delivered to partition (-?\d+) \(offset (-?\d+)\)")
FAILED = re.compile(rb"(?:delivery failed|% ERROR|% FATAL)[^\n]*")
FORMAT = "%p %o %T %K %S %h\\n%k%s"


def _kcat() -> str:
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if not path:
        raise RuntimeError("kcat not found on PATH; run scripts/install-test-deps.sh (Debian package kcat)")
    return path


class KcatError(Exception):
    pass


@dataclass
class KcatClient(Client):
    """kcat. `config` adds -X properties to every run."""

    config: dict[str, Any] = field(default_factory=dict)
    name: str = field(default="kcat", init=False)

    def _base(self, extra: dict[str, Any] | None = None) -> list[str]:
        args = [_kcat(), "-b", self.bootstrap, "-X", "broker.address.family=v4", "-m", "15"]
        for k, v in {**self.config, **(extra or {})}.items():
            args += ["-X", f"{k}={v}"]
        return args

    def partition_count(self, topic: str) -> int:
        res = subprocess.run([*self._base(), "-L", "-J", "-t", topic], capture_output=True, timeout=30)
        if res.returncode != 0:
            raise KcatError(f"kcat -L failed: {res.stderr.decode(errors='replace')[-2000:]}")
        md = json.loads(res.stdout)
        for t in md.get("topics", []):
            if t.get("topic") == topic:
                if t.get("error"):
                    raise KcatError(f"kcat -L {topic}: {t['error']}")
                return len(t["partitions"])
        raise KcatError(f"kcat -L: topic {topic} not in metadata: {md}")

    # ---- produce ----

    def produce(self, topic, msgs, *, partition=None, compression="none", idempotent=False, acks="all",
                config: dict[str, Any] | None = None, timeout: float = 40.0) -> list[ProduceResult]:
        if any(m.timestamp_ms is not None for m in msgs):
            raise Unsupported("kcat cannot set record timestamps when producing")
        targets = [m.partition if m.partition is not None else partition for m in msgs]
        predicted: list[int | None] = list(targets)
        if any(t is None for t in targets):
            n = self.partition_count(topic)
            for i, (m, t) in enumerate(zip(msgs, targets)):
                if t is None:
                    if n == 1:
                        predicted[i] = 0
                    elif m.key:
                        predicted[i] = zlib.crc32(m.key) % n
                    else:
                        raise Unsupported("kcat: unkeyed records on a multi-partition topic go to a random "
                                          "partition, and its delivery reports do not say which record was which")
        conf = {
            "acks": acks,
            "compression.codec": compression,
            "enable.idempotence": str(bool(idempotent)).lower(),
            "linger.ms": 20,
            "message.max.bytes": max(1_000_000, max((len(m.value or b"") + len(m.key or b"") for m in msgs),
                                                    default=0) + 64 * 1024),
            "message.timeout.ms": int(timeout * 1000),
            **(config or {}),
        }
        data = [m.value or b"" for m in msgs] + [m.key or b"" for m in msgs]
        while True:
            tok = uuid.uuid4().hex[:12].encode()
            delim, kdelim = b"\x1e<" + tok + b">\x1e", b"\x1f<" + tok + b">\x1f"
            if not any(delim in d or kdelim in d for d in data):
                break

        results: list[ProduceResult | None] = [None] * len(msgs)
        for run in _runs(msgs, targets):
            first = run[0]
            m0 = msgs[first]
            null_mode = any(msgs[i].value is None for i in run)
            args = [*self._base(conf), "-P", "-t", topic, "-vv", "-D", _escape(delim), "-K", _escape(kdelim)]
            if targets[first] is not None:
                args += ["-p", str(targets[first])]
            if null_mode:
                args.append("-Z")
            for name, value in m0.headers:
                try:
                    args += ["-H", name if value is None else f"{name}={value.decode()}"]
                except UnicodeDecodeError:
                    raise Unsupported("kcat takes header values as command-line text (-H name=value)") from None
            if null_mode:  # -Z: an empty key or value is sent as null
                payload = b"".join((msgs[i].key or b"") + kdelim + (msgs[i].value or b"") + delim for i in run)
            else:  # no key delimiter: a null key
                payload = b"".join(
                    (b"" if msgs[i].key is None else msgs[i].key + kdelim) + msgs[i].value + delim  # type: ignore[operator]
                    for i in run)
            try:
                res = subprocess.run(args, input=payload, capture_output=True, timeout=timeout + 15)
            except subprocess.TimeoutExpired as e:
                raise TimeoutError(f"kcat -P did not finish in {timeout + 15}s: {e.stderr!r}") from None
            out = res.stdout + res.stderr
            reports = [(int(p), int(o)) for p, o in DELIVERED.findall(out)]
            failures = FAILED.findall(out)
            if failures or res.returncode != 0 or len(reports) != len(run):
                raise KcatError(f"kcat -P to {topic} (exit {res.returncode}): {len(reports)} of {len(run)} "
                                f"delivered; {b' | '.join(failures).decode(errors='replace')}\n"
                                f"{res.stderr.decode(errors='replace')[-3000:]}")
            # Reports arrive in order within a partition; match them to records per partition.
            by_part: dict[int, list[int]] = {}
            for p, o in reports:
                by_part.setdefault(p, []).append(o)
            for i in run:
                offsets = by_part.get(predicted[i])  # type: ignore[arg-type]
                if not offsets:
                    raise KcatError(f"kcat delivered to partitions {sorted(by_part)} but record {i} was expected "
                                    f"in partition {predicted[i]} (reports {reports})")
                results[i] = ProduceResult(predicted[i], offsets.pop(0))  # type: ignore[arg-type]
        return results  # type: ignore[return-value]

    # ---- consume ----

    def consume(self, topic, partitions, count, *, start="earliest", isolation="read_uncommitted",
                timeout_s=30.0, config: dict[str, Any] | None = None) -> list[Msg]:
        partitions = list(partitions)
        args = [*self._base({"isolation.level": isolation, "fetch.wait.max.ms": 200,
                             "fetch.message.max.bytes": 4 * 1024 * 1024,
                             "receive.message.max.bytes": 64 * 1024 * 1024, **(config or {})}),
                "-C", "-t", topic, "-c", str(count), "-f", FORMAT, "-q"]
        if len(partitions) == 1:
            args += ["-p", str(partitions[0])]
        elif sorted(partitions) != list(range(self.partition_count(topic))):
            raise Unsupported("kcat consumes one partition or all of them")
        s = start_offset(start)
        if isinstance(s, dict):
            if len(set(s[p] for p in partitions)) != 1:
                raise Unsupported("kcat starts every partition at the same offset")
            s = s[partitions[0]]
        args += ["-o", {"earliest": "beginning", "latest": "end"}.get(s, str(s))]  # type: ignore[arg-type]
        try:
            res = subprocess.run(args, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            return _parse(e.stdout or b"")  # short: base.Client raises ShortConsume
        msgs = _parse(res.stdout)
        if res.returncode != 0 or len(msgs) > count:
            raise KcatError(f"kcat -C exited {res.returncode} with {len(msgs)} of {count} records: "
                            f"{res.stderr.decode(errors='replace')[-3000:]}")
        return msgs


def _escape(delim: bytes) -> str:
    """kcat's delimiter syntax: \\xNN for bytes that are not printable."""
    return "".join(chr(b) if 0x21 <= b < 0x7F and b != 0x5C else f"\\x{b:02x}" for b in delim)


def _runs(msgs: list[Msg], targets: list[int | None]) -> list[list[int]]:
    """Consecutive records that one kcat run can send: same headers, same target, -Z compatible."""
    runs: list[list[int]] = []
    for i, m in enumerate(msgs):
        if runs:
            j = runs[-1][0]
            cur = runs[-1]
            needs_z = any(msgs[k].value is None for k in cur) or m.value is None
            # with -Z, empty keys and values become null: keep those out of a -Z run
            z_conflict = needs_z and any(msgs[k].value == b"" or msgs[k].key == b"" for k in [*cur, i])
            if msgs[j].headers == m.headers and targets[j] == targets[i] and not z_conflict:
                cur.append(i)
                continue
        runs.append([i])
    for m in msgs:
        if m.value is None and m.key == b"":
            raise Unsupported("kcat cannot send an empty key with a null value (-Z makes both null)")
        if m.value == b"" and m.key is None:
            raise Unsupported("kcat skips an input record that has neither key nor value bytes")
    return runs


def _parse(out: bytes) -> list[Msg]:
    msgs: list[Msg] = []
    pos = 0
    while pos < len(out):
        nl = out.find(b"\n", pos)
        if nl < 0:
            break
        fields = out[pos:nl].decode(errors="replace").split(" ", 5)
        if len(fields) < 5:
            break
        p, o, ts, klen, vlen = map(int, fields[:5])
        hdr = fields[5] if len(fields) > 5 else ""
        pos = nl + 1
        key = None if klen < 0 else out[pos:pos + klen]
        pos += max(klen, 0)
        value = None if vlen < 0 else out[pos:pos + vlen]
        pos += max(vlen, 0)
        if (key is not None and len(key) != klen) or (value is not None and len(value) != vlen):
            break  # a partial record (timeout)
        headers = []
        if hdr:
            for part in hdr.split(","):
                name, eq, val = part.partition("=")
                headers.append((name, None if val == "NULL" else val.encode()))
        msgs.append(Msg(value=value, key=key, headers=tuple(headers), timestamp_ms=ts, partition=p, offset=o))
    return msgs
