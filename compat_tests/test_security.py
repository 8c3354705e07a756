"""Listener security with real clients: SSL, SASL_PLAINTEXT and SASL_SSL with PLAIN and
SCRAM-SHA-256/512, mutual TLS, and what a bad client gets (wrong password, unknown mechanism,
requests out of order or before authentication, a TLS handshake that never finishes).

One broker per module serves every case, on Apache Kafka (``--broker=kafka``) as on kafkalite,
configured with the same Kafka settings: PEM keystore and truststore from a throwaway CA
(trustme), JAAS configs per listener and mechanism, SCRAM users (`scram.users`, which becomes
kafka-storage's ``--add-scram`` on Kafka).
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
import uuid
from dataclasses import dataclass

import pytest

from kafkalite.broker.security import pkcs8
from compat_tests import brokers
from compat_tests.clients.base import Msg
from kafkalite.protocol.client import WireClient

pytestmark = [pytest.mark.security]

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SCRAM_USERS = ("SCRAM-SHA-256=[name=bob,password=bob-secret],SCRAM-SHA-512=[name=bob,password=bob-secret],"
               "SCRAM-SHA-512=[name=carol,iterations=8192,password=carol-secret]")
MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
# listener name -> security protocol; MTLS is an SSL listener that requires a client certificate
# REAUTH: PLAIN and OAUTHBEARER sessions that expire after REAUTH_MS (KIP-368)
LISTENERS = {"SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL", "MTLS": "SSL",
             "REAUTH": "SASL_PLAINTEXT"}
REAUTH_MS = 1500
OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka";')


@dataclass
class Certs:
    ca: str
    server: str  # key + chain
    client_cert: str
    client_key: str


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certs:
    import trustme

    d = tmp_path_factory.mktemp("certs")
    ca = trustme.CA(organization_name="Acme test CA")
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("client@acme.test", common_name="client", organization_name="Acme")
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    # Kafka reads PKCS#8 keys only (trustme writes SEC1 EC keys)
    (d / "server.pem").write_bytes(pkcs8(server.private_key_pem.bytes())
                                   + b"".join(b.bytes() for b in server.cert_chain_pems))
    client.cert_chain_pems[0].write_to_path(str(d / "client.pem"))
    (d / "client.key").write_bytes(pkcs8(client.private_key_pem.bytes()))
    return Certs(str(d / "ca.pem"), str(d / "server.pem"), str(d / "client.pem"), str(d / "client.key"))


def security_config(certs: Certs) -> dict[str, str]:
    config = {
        "sasl.enabled.mechanisms": MECHANISMS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": certs.server,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": certs.ca,
        "listener.name.mtls.ssl.client.auth": "required",
        "scram.users": SCRAM_USERS,
    }
    config.update({
        "listener.name.reauth.sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
        "listener.name.reauth.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.reauth.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
        "listener.name.reauth.plain.connections.max.reauth.ms": str(REAUTH_MS),
        "listener.name.reauth.oauthbearer.connections.max.reauth.ms": str(REAUTH_MS),
    })
    for lis in ("sasl_plaintext", "sasl_ssl"):
        config[f"listener.name.{lis}.plain.sasl.jaas.config"] = PLAIN_JAAS
        config[f"listener.name.{lis}.scram-sha-256.sasl.jaas.config"] = SCRAM_JAAS
        config[f"listener.name.{lis}.scram-sha-512.sasl.jaas.config"] = SCRAM_JAAS
    return config


@pytest.fixture(scope="module")
def secured(certs):
    brokers.requires_own_broker("secured listeners")
    with brokers.start(config=security_config(certs), listeners=LISTENERS) as b:
        yield b


# --- client settings, per client family, from Kafka's client property names -----------------

@dataclass(frozen=True)
class Login:
    listener: str
    mechanism: str | None = None
    user: str | None = None
    password: str | None = None
    client_cert: bool = False

    @property
    def protocol(self) -> str:
        return LISTENERS[self.listener]


def kafka_props(login: Login, certs: Certs) -> dict[str, str]:
    """Kafka's client properties (the Java client; librdkafka takes the same names for most)."""
    p = {"security.protocol": login.protocol}
    if login.protocol in ("SSL", "SASL_SSL"):
        p.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": certs.ca})
        if login.client_cert:
            key = open(certs.client_key).read()
            chain = open(certs.client_cert).read()
            p.update({"ssl.keystore.type": "PEM", "ssl.keystore.key": key, "ssl.keystore.certificate.chain": chain})
    if login.mechanism == "OAUTHBEARER":
        # the client's unsecured token: sub and a scope list (",kafka": a comma-separated list)
        p.update({"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config":
                  "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                  f'unsecuredLoginStringClaim_sub="{login.user}" unsecuredLoginListClaim_scope=",kafka";'})
    elif login.mechanism:
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if login.mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        p.update({"sasl.mechanism": login.mechanism,
                  "sasl.jaas.config": f'{module} required username="{login.user}" password="{login.password}";'})
    return p


def librdkafka_conf(login: Login, certs: Certs) -> dict[str, str]:
    c = {"security.protocol": login.protocol}
    if login.protocol in ("SSL", "SASL_SSL"):
        c["ssl.ca.location"] = certs.ca
        if login.client_cert:
            c.update({"ssl.certificate.location": certs.client_cert, "ssl.key.location": certs.client_key})
    if login.mechanism == "OAUTHBEARER":
        c.update({"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
                  "sasl.oauthbearer.config": f"principal={login.user} scope=kafka"})
    elif login.mechanism:
        c.update({"sasl.mechanism": login.mechanism, "sasl.username": login.user, "sasl.password": login.password})
    return c


def python_options(login: Login, certs: Certs, *, aiokafka: bool = False) -> dict:
    """kafka-python's and aiokafka's keyword arguments."""
    o: dict = {"security_protocol": login.protocol}
    if login.protocol in ("SSL", "SASL_SSL"):
        if aiokafka:
            from aiokafka.helpers import create_ssl_context

            o["ssl_context"] = create_ssl_context(
                cafile=certs.ca, certfile=certs.client_cert if login.client_cert else None,
                keyfile=certs.client_key if login.client_cert else None)
        else:
            o.update({"ssl_cafile": certs.ca, "ssl_check_hostname": True})
            if login.client_cert:
                o.update({"ssl_certfile": certs.client_cert, "ssl_keyfile": certs.client_key})
    if login.mechanism:
        o.update({"sasl_mechanism": login.mechanism, "sasl_plain_username": login.user,
                  "sasl_plain_password": login.password})
    return o


def make_client(family: str, login: Login, secured, certs: Certs):
    address = secured.listener(login.listener)
    if family == "java":
        from compat_tests.clients.java import JavaClient

        return JavaClient(address, config=kafka_props(login, certs))
    if family == "librdkafka":
        from compat_tests.clients.librdkafka import LibrdkafkaClient

        return LibrdkafkaClient(address, config=librdkafka_conf(login, certs))
    if family == "kafka_python":
        from compat_tests.clients.kafka_python import KafkaPythonClient

        return KafkaPythonClient(address, options=python_options(login, certs))
    if family == "aiokafka":
        from compat_tests.clients.aiokafka_client import AiokafkaClient

        return AiokafkaClient(address, options=python_options(login, certs, aiokafka=True))
    if family == "kafkajs":
        from compat_tests.clients.kafkajs import KafkajsClient

        return KafkajsClient(address, security=kafkajs_security(login, certs))
    if family == "franz":
        from compat_tests.clients.franz import FranzClient

        sec = {"ca": certs.ca if login.protocol in ("SSL", "SASL_SSL") else "", "mechanism": login.mechanism or "",
               "user": login.user or "", "password": login.password or ""}
        return FranzClient(address, security=sec)
    if family == "kcat":
        from compat_tests.clients.kcat import KcatClient

        return KcatClient(address, config=librdkafka_conf(login, certs))
    raise ValueError(family)


def kafkajs_security(login: Login, certs: Certs) -> dict:
    sec: dict = {}
    if login.protocol in ("SSL", "SASL_SSL"):
        sec["ssl"] = {"ca": certs.ca}
        if login.client_cert:
            sec["ssl"].update({"cert": certs.client_cert, "key": certs.client_key})
    if login.mechanism:
        sec["sasl"] = {"mechanism": login.mechanism.lower(), "username": login.user, "password": login.password}
    return sec


FAMILIES = [pytest.param("java", marks=pytest.mark.java), pytest.param("librdkafka", marks=pytest.mark.librdkafka),
            pytest.param("kafka_python", marks=pytest.mark.kafka_python),
            pytest.param("aiokafka", marks=pytest.mark.aiokafka), pytest.param("kafkajs", marks=pytest.mark.kafkajs),
            pytest.param("kcat", marks=pytest.mark.kcat), pytest.param("franz", marks=pytest.mark.franz)]

LOGINS = [
    pytest.param(Login("SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret"), id="sasl_plaintext-plain"),
    pytest.param(Login("SASL_SSL", "PLAIN", "alice", "alice-secret"), id="sasl_ssl-plain"),
    pytest.param(Login("SASL_SSL", "SCRAM-SHA-256", "bob", "bob-secret"), id="sasl_ssl-scram256"),
    pytest.param(Login("SASL_PLAINTEXT", "SCRAM-SHA-512", "carol", "carol-secret"), id="sasl_plaintext-scram512"),
    pytest.param(Login("SSL"), id="ssl"),
    pytest.param(Login("MTLS", client_cert=True), id="mtls"),
]


def _topic(name: str) -> str:
    return f"sec-{name}-{uuid.uuid4().hex[:8]}"


def _family_logins():
    for family in FAMILIES:
        for login in LOGINS:
            mech = login.values[0].mechanism or ""
            if family.values[0] == "kcat" and mech.startswith("SCRAM"):
                continue  # refused on both brokers: test_kcat_scram_refused
            if family.values[0] == "franz" and login.values[0].client_cert:
                continue  # the Go driver's TLS option carries no client certificate
            yield pytest.param(family.values[0], login.values[0], marks=family.marks,
                               id=f"{login.id}-{family.values[0]}")


@pytest.mark.parametrize("family, login", list(_family_logins()))
def test_produce_consume(secured, certs, family, login):
    """The client authenticates on the secured listener, creates its topic, produces and reads back."""
    client = make_client(family, login, secured, certs)
    topic = _topic(family)
    # kcat creates no topics: librdkafka does it, authenticated the same way
    (make_client("librdkafka", login, secured, certs) if family == "kcat" else client).create_topic(topic, 1)
    sent = [Msg(value=f"{login.listener}-{i}".encode(), key=b"k") for i in range(3)]
    client.produce(topic, sent, partition=0)
    got = client.consume(topic, [0], 3, timeout_s=30)
    assert [m.value for m in got] == [m.value for m in sent]


# Debian's kcat 1.7.1 bundles librdkafka 2.0.2, whose SCRAM client-final-message puts its own
# nonce in front of the combined nonce (fixed in librdkafka 2.6.1); Kafka 4.x compares the nonce
# exactly and refuses every such login, and so does kafkalite
KCAT_SCRAM_FIXED_IN = (2, 6, 1)


@pytest.mark.kcat
@pytest.mark.parametrize("login", [l for l in LOGINS if (l.values[0].mechanism or "").startswith("SCRAM")])
def test_kcat_scram_refused(secured, certs, login):
    """kcat's SCRAM login is refused with Kafka's invalid-credentials message: its librdkafka
    repeats the client nonce in the client-final-message (test_scram_final_nonce_must_equal_the_combined_nonce).
    A kcat on librdkafka 2.6.1 or later fails here: its SCRAM cases then belong in test_produce_consume."""
    import re
    import subprocess

    from compat_tests.clients.kcat import KcatError, _kcat

    version = re.search(rb"librdkafka (\d+)\.(\d+)\.(\d+)", subprocess.run(
        [_kcat(), "-V"], capture_output=True, timeout=30).stdout)
    assert version, "kcat -V names no librdkafka version"
    assert tuple(map(int, version.groups())) < KCAT_SCRAM_FIXED_IN, (
        f"kcat bundles librdkafka {version.group(0).decode()}, whose SCRAM nonce is right: "
        "move kcat's SCRAM cases into test_produce_consume")
    client = make_client("kcat", login, secured, certs)
    with pytest.raises(KcatError) as info:
        client.produce(_topic("kcat-scram"), [Msg(value=b"x")], partition=0, timeout=5)
    assert ("SASL authentication error: Authentication failed during authentication due to invalid credentials "
            f"with SASL mechanism {login.mechanism}") in str(info.value)


# --- bad credentials with real clients --------------------------------------------------------

def test_wrong_password_librdkafka(secured, certs):
    from confluent_kafka import KafkaError, Producer

    errors: list = []
    conf = {"bootstrap.servers": secured.listener("SASL_SSL"), "error_cb": errors.append,
            **librdkafka_conf(Login("SASL_SSL", "PLAIN", "alice", "not-her-password"), certs)}
    p = Producer(conf)
    p.produce(_topic("wrong"), b"x")
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    p.purge()
    assert errors, "no error reported for a wrong password"
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "Authentication failed: Invalid username or password" in errors[0].str()


def test_wrong_scram_password_java(secured, certs):
    from compat_tests.clients.java import JavaClient, JavaError

    client = JavaClient(secured.listener("SASL_SSL"),
                        config={**kafka_props(Login("SASL_SSL", "SCRAM-SHA-256", "bob", "wrong"), certs),
                                "request.timeout.ms": "10000", "default.api.timeout.ms": "15000"})
    with pytest.raises(JavaError) as info:
        client.admin({"op": "listTopics"}, timeout=40)
    assert info.value.simple_type == "SaslAuthenticationException"
    assert info.value.message == ("Authentication failed during authentication due to invalid credentials with "
                                  "SASL mechanism SCRAM-SHA-256")


# --- the protocol by hand: what Kafka answers a client that misbehaves ------------------------

def _handshake(mechanism: str, version: int = 1):
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

    return SaslHandshakeRequest(mechanism=mechanism)


def _authenticate(token: bytes):
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest

    return SaslAuthenticateRequest(auth_bytes=token)


def _metadata():
    from kio.schema.metadata.v12.request import MetadataRequest

    return MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def _closed(client: WireClient) -> bool:
    """True when the broker closed the connection (within the client's timeout)."""
    try:
        client.recv_frame()
    except (ConnectionError, OSError):
        return True
    return False


def test_unknown_mechanism(secured):
    """UNSUPPORTED_SASL_MECHANISM with the enabled list, then the connection is closed."""
    with WireClient(secured.listener("SASL_PLAINTEXT"), timeout=10) as c:
        resp = c.request(_handshake("GSSAPI"))
        assert int(resp.error_code) == 33  # UNSUPPORTED_SASL_MECHANISM
        assert sorted(resp.mechanisms) == sorted(MECHANISMS.split(","))
        assert _closed(c)


def test_wrong_password_by_hand(secured):
    with WireClient(secured.listener("SASL_PLAINTEXT"), timeout=10) as c:
        assert int(c.request(_handshake("PLAIN")).error_code) == 0
        resp = c.request(_authenticate(b"\0alice\0wrong"))
        assert int(resp.error_code) == 58  # SASL_AUTHENTICATION_FAILED
        assert resp.error_message == "Authentication failed: Invalid username or password"
        assert _closed(c)


def test_plain_success_and_session_lifetime(secured):
    """PLAIN by hand: NONE, no token back, no session lifetime (connections.max.reauth.ms unset),
    and then the connection serves ordinary requests."""
    with WireClient(secured.listener("SASL_PLAINTEXT"), timeout=10) as c:
        assert int(c.request(_handshake("PLAIN")).error_code) == 0
        resp = c.request(_authenticate(b"\0alice\0alice-secret"))
        assert int(resp.error_code) == 0 and not resp.error_message
        assert resp.session_lifetime.total_seconds() == 0
        assert len(c.request(_metadata()).brokers) == 1
        # a second handshake on an authenticated connection without re-authentication
        assert int(c.request(_handshake("PLAIN")).error_code) == 34  # ILLEGAL_SASL_STATE
        again = c.request(_authenticate(b"\0alice\0alice-secret"))
        assert int(again.error_code) == 34
        assert again.error_message == "SaslAuthenticate request received after successful authentication"


def test_request_before_authentication_closes(secured):
    """Only ApiVersions and SaslHandshake may come before authentication: anything else closes."""
    with WireClient(secured.listener("SASL_PLAINTEXT"), timeout=10) as c:
        c.send_only(_metadata())
        assert _closed(c)


def test_oversized_frame_before_authentication_closes(secured):
    """sasl.server.max.receive.size (512 KiB by default) caps a frame before authentication: a
    header announcing 64 MiB closes the connection at once, the rest never awaited
    (CVE-2022-34917)."""
    with WireClient(secured.listener("SASL_PLAINTEXT"), timeout=10) as c:
        c.sock.sendall(struct.pack(">i", 64 << 20) + b"\0\x12")
        try:
            data = c.sock.recv(1)
        except ConnectionResetError:
            data = b""
        assert data == b"", data  # closed: no answer, and no hang (a timeout raises)


def test_authenticate_before_handshake_closes(secured):
    with WireClient(secured.listener("SASL_PLAINTEXT"), timeout=10) as c:
        c.send_only(_authenticate(b"\0alice\0alice-secret"))
        assert _closed(c)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_other_request_during_authentication_is_illegal_state_then_closed(secured, mechanism):
    """Once the handshake chose a mechanism only SaslAuthenticate may follow: any other request
    gets its own error response with ILLEGAL_SASL_STATE, then the connection is closed."""
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    with WireClient(secured.listener("SASL_PLAINTEXT"), timeout=10) as c:
        assert int(c.request(_handshake(mechanism)).error_code) == 0
        resp = c.request(ListGroupsRequest(states_filter=(), types_filter=()))
        assert int(resp.error_code) == 34  # ILLEGAL_SASL_STATE
        assert resp.groups == ()
        assert _closed(c)


def _scram_final(mechanism: str, first_bare: str, server_first: str, password: str, nonce: str) -> str:
    """RFC 5802's client-final-message for `nonce`, with a proof computed over exactly what is sent."""
    import base64
    import hashlib
    import hmac

    h = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(h, password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", h).digest()
    without_proof = f"c=biws,r={nonce}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.new(h, client_key).digest(), auth_message, h).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    return f"{without_proof},p={base64.b64encode(proof).decode()}"


@pytest.mark.parametrize("echo", ["exact", "client-nonce-twice"])
def test_scram_final_nonce_must_equal_the_combined_nonce(secured, echo):
    """The client-final-message must carry exactly the server-first-message's nonce (RFC 5802;
    Kafka 4.x compares with equals, 3.x accepted any nonce ending with it). librdkafka before
    2.6.1 sends its own nonce in front of the combined one: refused even with a proof that
    matches what it sent."""
    client_nonce = uuid.uuid4().hex
    first_bare = f"n=bob,r={client_nonce}"
    with WireClient(secured.listener("SASL_PLAINTEXT"), timeout=10) as c:
        assert int(c.request(_handshake("SCRAM-SHA-256")).error_code) == 0
        first = c.request(_authenticate(f"n,,{first_bare}".encode()))
        assert int(first.error_code) == 0
        server_first = first.auth_bytes.decode()
        combined = server_first.split(",")[0].removeprefix("r=")
        assert combined.startswith(client_nonce) and len(combined) > len(client_nonce)
        nonce = combined if echo == "exact" else client_nonce + combined
        final = c.request(_authenticate(
            _scram_final("SCRAM-SHA-256", first_bare, server_first, "bob-secret", nonce).encode()))
        if echo == "exact":
            assert int(final.error_code) == 0 and final.auth_bytes.startswith(b"v=")
            assert len(c.request(_metadata()).brokers) == 1
        else:
            assert int(final.error_code) == 58  # SASL_AUTHENTICATION_FAILED
            assert final.error_message == ("Authentication failed during authentication due to invalid "
                                           "credentials with SASL mechanism SCRAM-SHA-256")
            assert _closed(c)


def test_sasl_on_plaintext_listener_is_illegal_state(secured):
    with WireClient(secured.bootstrap, timeout=10) as c:
        assert int(c.request(_handshake("PLAIN")).error_code) == 34


def test_stalled_tls_handshake_does_not_block_others(secured, certs):
    """A client that connects to a TLS listener and never starts the handshake holds up nobody."""
    host, port = secured.listener("SSL").rsplit(":", 1)
    stalled = [socket.create_connection((host, int(port)), timeout=5) for _ in range(3)]
    try:
        ctx = ssl.create_default_context(cafile=certs.ca)
        t0 = time.monotonic()
        with WireClient(secured.listener("SSL"), timeout=10, ssl_context=ctx) as c:
            assert len(c.request(_metadata()).brokers) == 1
        assert time.monotonic() - t0 < 5
    finally:
        for s in stalled:
            s.close()


def test_mtls_requires_a_certificate(secured, certs):
    """ssl.client.auth=required: a client without a certificate fails the TLS handshake."""
    ctx = ssl.create_default_context(cafile=certs.ca)
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        with WireClient(secured.listener("MTLS"), timeout=10, ssl_context=ctx) as c:
            c.request(_metadata())


# --- SCRAM credentials managed at run time ----------------------------------------------------

def _wait_for(fn, timeout: float = 20.0):
    """fn() until it returns without raising (Kafka's broker learns of a credential from its
    controller a moment after the Admin call returns)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


@pytest.mark.java
def test_scram_credentials_with_java_admin(secured, certs):
    """Admin.describeUserScramCredentials / alterUserScramCredentials: the users of scram.users,
    a user added at run time who then authenticates (librdkafka), and deleted again."""
    from compat_tests.clients.java import JavaClient, JavaError
    from compat_tests.clients.librdkafka import LibrdkafkaClient

    admin = JavaClient(secured.listener("SASL_SSL"),
                       config=kafka_props(Login("SASL_SSL", "SCRAM-SHA-512", "bob", "bob-secret"), certs))
    [described] = admin.admin({"op": "describeUserScramCredentials", "users": ["bob", "carol"]})
    assert described == {"bob": {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096}, "carol": {"SCRAM-SHA-512": 8192}}

    user = f"dave-{uuid.uuid4().hex[:6]}"
    admin.admin({"op": "alterUserScramCredentials", "upsertions": [
        {"user": user, "mechanism": "SCRAM-SHA-256", "iterations": 4096, "password": "dave-secret"}]})
    assert admin.admin({"op": "describeUserScramCredentials", "users": [user]}) == [{user: {"SCRAM-SHA-256": 4096}}]

    login = Login("SASL_SSL", "SCRAM-SHA-256", user, "dave-secret")
    topic = _topic("dave")

    def produce_as_dave():
        client = LibrdkafkaClient(secured.listener("SASL_SSL"), config=librdkafka_conf(login, certs))
        client.create_topic(topic, 1)
        return client.produce(topic, [Msg(value=b"from dave")], partition=0)

    assert _wait_for(produce_as_dave)[0].offset == 0

    admin.admin({"op": "alterUserScramCredentials", "deletions": [{"user": user, "mechanism": "SCRAM-SHA-256"}]})
    # Admin.describeUserScramCredentials(...).all() reports a user without credentials as empty
    assert admin.admin({"op": "describeUserScramCredentials", "users": [user]}) == [{user: {}}]
    with pytest.raises(JavaError) as info:
        admin.admin({"op": "alterUserScramCredentials", "upsertions": [
            {"user": user, "mechanism": "SCRAM-SHA-256", "iterations": 100, "password": "x"}]})
    assert info.value.simple_type == "UnacceptableCredentialException"
    assert "Too few iterations" in (info.value.message or "")


def test_scram_credential_errors_by_hand(secured):
    """Per-user errors of DescribeUserScramCredentials and AlterUserScramCredentials, with Kafka's messages."""
    from kio.schema.alter_user_scram_credentials.v0 import request as alter
    from kio.schema.describe_user_scram_credentials.v0 import request as describe

    with WireClient(secured.bootstrap, timeout=10) as c:
        resp = c.request(describe.DescribeUserScramCredentialsRequest(users=(
            describe.UserName(name="carol"), describe.UserName(name="nobody"),
            describe.UserName(name="bob"), describe.UserName(name="bob"))))
        got = {r.user: (int(r.error_code), r.error_message, sorted((int(i.mechanism), int(i.iterations))
                                                               for i in r.credential_infos))
               for r in resp.results}
        assert (int(resp.error_code), resp.error_message) == (0, "")
        assert got == {
            "carol": (0, "", [(2, 8192)]),
            "nobody": (91, "Attempt to describe a user credential that does not exist: nobody", []),
            "bob": (92, "Cannot describe SCRAM credentials for the same user twice in a single request: bob", []),
        }
        resp = c.request(alter.AlterUserScramCredentialsRequest(
            deletions=(alter.ScramCredentialDeletion(name="nobody", mechanism=1),
                       alter.ScramCredentialDeletion(name="", mechanism=1)),
            upsertions=(alter.ScramCredentialUpsertion(name="erin", mechanism=3, iterations=4096, salt=b"s" * 16,
                                                       salted_password=b"p" * 32),
                        alter.ScramCredentialUpsertion(name="frank", mechanism=1, iterations=20000,
                                                       salt=b"s" * 16, salted_password=b"p" * 32))))
        got2 = {r.user: (int(r.error_code), r.error_message) for r in resp.results}
        assert got2 == {
            "nobody": (91, "Attempt to delete a user credential that does not exist"),
            "": (93, "Username must not be empty"),
            "erin": (33, "Unknown SCRAM mechanism"),
            "frank": (93, "Too many iterations"),
        }


# --- KIP-368 session lifetimes and re-authentication, OAUTHBEARER ------------------------------

def _login(c: WireClient, mechanism: str, token: bytes):
    assert int(c.request(_handshake(mechanism)).error_code) == 0
    return c.request(_authenticate(token))


def test_reauthentication_and_expiry(secured):
    """connections.max.reauth.ms: the session lifetime is reported; re-authenticating on the same
    connection (same mechanism and principal) renews it; a request after expiry closes the connection."""
    with WireClient(secured.listener("REAUTH"), timeout=10) as c:
        first = _login(c, "PLAIN", b"\0alice\0alice-secret")
        assert int(first.error_code) == 0
        assert first.session_lifetime.total_seconds() * 1000 == REAUTH_MS
        time.sleep(1.1)  # Kafka allows one re-authentication a second
        again = _login(c, "PLAIN", b"\0alice\0alice-secret")
        assert int(again.error_code) == 0 and again.session_lifetime.total_seconds() * 1000 == REAUTH_MS
        assert len(c.request(_metadata()).brokers) == 1
        time.sleep(REAUTH_MS / 1000 + 0.5)
        c.send_only(_metadata())
        assert _closed(c)


def test_reauthentication_cannot_change_principal(secured):
    with WireClient(secured.listener("REAUTH"), timeout=10) as c:
        assert int(_login(c, "PLAIN", b"\0alice\0alice-secret").error_code) == 0
        time.sleep(1.1)
        resp = _login(c, "PLAIN", b"\0admin\0admin-secret")
        assert int(resp.error_code) == 58
        assert resp.error_message == "Cannot change principals during re-authentication from User.alice: User.admin"
        assert _closed(c)


def _unsecured_jwt(claims: dict) -> str:
    import base64
    import json

    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part(claims)}."


def _oauth_token(jwt: str) -> bytes:
    return f"n,,\x01auth=Bearer {jwt}\x01\x01".encode()


def test_oauthbearer_unsecured_token(secured):
    """Kafka's unsecured validator: sub is the principal, exp bounds the session, the required
    scope must be granted (a string claim is one scope); a refused token gets the error JSON, then
    SASL_AUTHENTICATION_FAILED."""
    now = time.time()
    with WireClient(secured.listener("REAUTH"), timeout=10) as c:
        ok = _login(c, "OAUTHBEARER", _oauth_token(_unsecured_jwt(
            {"sub": "alice", "iat": int(now), "exp": int(now) + 3600, "scope": ["other", "kafka"]})))
        assert int(ok.error_code) == 0 and ok.auth_bytes == b""
        assert ok.session_lifetime.total_seconds() * 1000 == REAUTH_MS
        assert len(c.request(_metadata()).brokers) == 1
    with WireClient(secured.listener("REAUTH"), timeout=10) as c:
        expired = _login(c, "OAUTHBEARER", _oauth_token(_unsecured_jwt(
            {"sub": "alice", "iat": int(now) - 7200, "exp": int(now) - 3600, "scope": "kafka"})))
        assert int(expired.error_code) == 0
        assert expired.auth_bytes == b'{"status":"invalid_token"}'
        failed = c.request(_authenticate(b"\x01"))
        assert int(failed.error_code) == 58 and failed.error_message == '{"status":"invalid_token"}'
        assert _closed(c)
    with WireClient(secured.listener("REAUTH"), timeout=10) as c:
        no_scope = _login(c, "OAUTHBEARER", _oauth_token(_unsecured_jwt(
            {"sub": "alice", "iat": int(now), "exp": int(now) + 3600, "scope": "kafka other"})))
        assert no_scope.auth_bytes == b'{"status":"insufficient_scope", "scope":"[kafka]"}'


@pytest.mark.parametrize("family, mechanism", [
    pytest.param("java", "PLAIN", marks=pytest.mark.java),
    pytest.param("librdkafka", "PLAIN", marks=pytest.mark.librdkafka),
    pytest.param("java", "OAUTHBEARER", marks=pytest.mark.java),
    pytest.param("librdkafka", "OAUTHBEARER", marks=pytest.mark.librdkafka),
])
def test_clients_reauthenticate(secured, certs, family, mechanism):
    """Java and librdkafka re-authenticate (KIP-368) before their session expires: produce and
    consume across several session lifetimes on one listener with connections.max.reauth.ms."""
    password = "alice-secret" if mechanism == "PLAIN" else None
    client = make_client(family, Login("REAUTH", mechanism, "alice", password), secured, certs)
    topic = _topic(f"reauth-{family}")
    client.create_topic(topic, 1)
    for i in range(3):
        client.produce(topic, [Msg(value=f"round {i}".encode())], partition=0)
        time.sleep(REAUTH_MS / 1000)
    got = client.consume(topic, [0], 3, timeout_s=30)
    assert [m.value for m in got] == [b"round 0", b"round 1", b"round 2"]


# --- transactions over SASL_SSL ---------------------------------------------------------------

@pytest.mark.transactions
@pytest.mark.parametrize("family", [pytest.param("java", marks=pytest.mark.java),
                                    pytest.param("librdkafka", marks=pytest.mark.librdkafka)])
def test_transactions_over_sasl_ssl(secured, certs, family):
    """A committed and an aborted transaction over SASL_SSL (SCRAM-SHA-512): the transaction
    coordinator's requests ride the authenticated connection; read_committed sees the commit only."""
    login = Login("SASL_SSL", "SCRAM-SHA-512", "bob", "bob-secret")
    address = secured.listener("SASL_SSL")
    topic = _topic(f"txn-{family}")
    reader = make_client("librdkafka", login, secured, certs)
    reader.create_topic(topic, 1)
    txns = [{"records": [[topic, 0, "committed-1"], [topic, 0, "committed-2"]], "end": "commit"},
            {"records": [[topic, 0, "aborted"]], "end": "abort"},
            {"records": [[topic, 0, "committed-3"]], "end": "commit"}]
    tid = f"sec-{family}-{uuid.uuid4().hex[:6]}"
    if family == "java":
        from compat_tests.txn import java_txn

        java_txn.run(address, "plan", config=kafka_props(login, certs), transactional_id=tid, txns=txns)
    else:
        from compat_tests.txn import rdkafka_txn

        rdkafka_txn.run_plan(address, tid, txns, **librdkafka_conf(login, certs))
    got = reader.consume(topic, [0], 3, isolation="read_committed", timeout_s=30)
    assert [m.value for m in got] == [b"committed-1", b"committed-2", b"committed-3"]


def test_handshake_v0_then_bare_tokens(secured):
    """SaslHandshake v0: the SASL tokens follow as bare size-prefixed frames (no SaslAuthenticate);
    a wrong password closes the connection without an answer."""
    from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as HandshakeV0

    with WireClient(secured.listener("SASL_PLAINTEXT"), timeout=10) as c:
        assert int(c.request(HandshakeV0(mechanism="PLAIN")).error_code) == 0
        c.send_raw(b"\0alice\0alice-secret")
        assert c.recv_frame() == b""  # PLAIN's empty server token
        assert len(c.request(_metadata()).brokers) == 1
    with WireClient(secured.listener("SASL_PLAINTEXT"), timeout=10) as c:
        assert int(c.request(HandshakeV0(mechanism="PLAIN")).error_code) == 0
        c.send_raw(b"\0alice\0wrong")
        assert _closed(c)
