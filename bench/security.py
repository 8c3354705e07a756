"""What listener security costs on kafkalite: produce/consume throughput over PLAINTEXT, SSL
and SASL_SSL (SCRAM-SHA-256), and the time one SASL authentication takes.

One kafkalite broker with three listeners (PLAINTEXT, SSL and SASL_SSL, a throwaway CA from
``--tls-self-signed``), bench.throughput's produce and consume (confluent-kafka, one partition,
1 KiB values, acks=all, idempotent) on each listener in turn, alternating, for ``--runs``
rounds; the "kafkalite/broker" column is PLAINTEXT's figure over the listener's.

Authentication: a raw connection (no client library) connects to the SASL_PLAINTEXT listener
and authenticates (SaslHandshake + SaslAuthenticate, by hand: one exchange for PLAIN, two for
SCRAM-SHA-256 and SCRAM-SHA-512 with 4096 iterations, the client's PBKDF2 included as every
client pays it); the time from connect() to the authenticated answer, ``--logins`` times per
mechanism, after one warm-up.

    python -m bench.security [--records 50000] [--runs 3] [--logins 50] [--json FILE]
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import uuid

from bench import peers, throughput
from bench.stats import Report, emit, produce_load_parser

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_bench="bench-secret";'
SCRAM_USERS = "SCRAM-SHA-256=[name=bench,password=bench-secret],SCRAM-SHA-512=[name=bench,password=bench-secret]"
MODES = {"kafkalite": "PLAINTEXT", "kafkalite SSL": "SSL", "kafkalite SASL_SSL": "SASL_SSL"}


def client_config(listener: str, ca: str) -> dict:
    conf: dict = {"security.protocol": listener}
    if listener in ("SSL", "SASL_SSL"):
        conf["ssl.ca.location"] = ca
    if listener.startswith("SASL_"):
        conf.update({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "bench", "sasl.password": "bench-secret"})
    return conf


def _scram_client(mechanism: str, exchange) -> None:
    """RFC 5802's client side; `exchange(token) -> server token`."""
    h = "sha256" if mechanism.endswith("256") else "sha512"
    nonce = secrets.token_hex(16)
    first_bare = f"n=bench,r={nonce}"
    server_first = exchange(f"n,,{first_bare}".encode()).decode()
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(h, b"bench-secret", base64.b64decode(attrs["s"]), int(attrs["i"]))
    without_proof = f"c=biws,r={attrs['r']}"
    auth = f"{first_bare},{server_first},{without_proof}".encode()
    client_key = hmac.new(salted, b"Client Key", h).digest()
    signature = hmac.new(hashlib.new(h, client_key).digest(), auth, h).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    final = exchange(f"{without_proof},p={proof}".encode()).decode()
    expected = base64.b64encode(hmac.new(hmac.new(salted, b"Server Key", h).digest(), auth, h).digest()).decode()
    if final != f"v={expected}":
        raise RuntimeError(f"server signature mismatch: {final!r}")


def login_once(address: str, mechanism: str) -> float:
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

    from kafkalite.protocol.client import WireClient

    t0 = time.perf_counter()
    with WireClient(address, timeout=10) as c:
        if int(c.request(SaslHandshakeRequest(mechanism=mechanism)).error_code):
            raise RuntimeError(f"{mechanism} not enabled")

        def exchange(token: bytes) -> bytes:
            resp = c.request(SaslAuthenticateRequest(auth_bytes=token))
            if int(resp.error_code):
                raise RuntimeError(f"{mechanism}: {resp.error_message}")
            return resp.auth_bytes

        if mechanism == "PLAIN":
            exchange(b"\0bench\0bench-secret")
        else:
            _scram_client(mechanism, exchange)
        return (time.perf_counter() - t0) * 1000


def run(runs: int, records: int, value_size: int, logins: int, warmup_records: int) -> Report:
    import kafkalite

    report = Report("listener security: throughput by listener, SASL authentication time",
                    settings={"records": records, "value_size": value_size, "runs": runs, "logins": logins})
    produce = report.metric("security", "produce", "records/s", True)
    consume = report.metric("security", "consume", "records/s", True)
    logins_ms = {m: report.metric("security", f"{m} login", "ms", False)
                 for m in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")}
    config = {"listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
              "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS, "scram.users": SCRAM_USERS}
    with kafkalite.running(listeners=["PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0", "SASL_SSL://127.0.0.1:0",
                                      "SASL_PLAINTEXT://127.0.0.1:0"],
                           tls_self_signed=True, config=config, log_level="WARNING") as broker:
        ca = str(broker.ca_path)
        for rnd in range(runs + 1):
            for label, listener in MODES.items():
                address = broker.listeners[listener]
                conf = client_config(listener, ca)
                topic = f"bench-sec-{uuid.uuid4().hex[:8]}"
                peers.create_topic(broker.bootstrap, topic)
                n = warmup_records if rnd == 0 else records
                p = throughput.produce(address, topic, n, value_size, pid=broker.pid, client_config=conf)
                c = throughput.consume(address, topic, n, pid=broker.pid, client_config=conf)
                if rnd > 0:
                    produce.add(label, p.records / p.seconds)
                    consume.add(label, c.records / c.seconds)
        for mechanism, metric in logins_ms.items():
            login_once(broker.listeners["SASL_PLAINTEXT"], mechanism)  # warm-up
            for _ in range(logins):
                metric.add("kafkalite", login_once(broker.listeners["SASL_PLAINTEXT"], mechanism))
    report.notes.append("throughput: the kafkalite row is PLAINTEXT; kafkalite/broker is PLAINTEXT over that "
                        "listener; SASL_SSL uses SCRAM-SHA-256")
    report.notes.append("login: connect() to the authenticated answer on SASL_PLAINTEXT, the client's PBKDF2 "
                        "(4096 iterations) included")
    return report


def main(argv: list[str] | None = None) -> Report:
    ap = produce_load_parser(__doc__, "python -m bench.security", records=50_000, warmup_records=5_000)
    ap.add_argument("--logins", type=int, default=50)
    args = ap.parse_args(argv)
    report = run(args.runs, args.records, args.value_size, args.logins, args.warmup_records)
    emit(report, args.json)
    return report


if __name__ == "__main__":
    main()
