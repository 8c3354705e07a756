"""Listener security settings and what kafkalite alone decides: listener-prefixed keys from every
source, JAAS configs, SCRAM credentials on disk, principal mapping rules, --tls-self-signed and
a mutual-TLS principal, secrets kept out of logs, the TLS handshake timeout."""

from __future__ import annotations

import json
import re
import socket
import ssl
import time

import pytest
from kio.schema.metadata.v12.request import MetadataRequest

from kafkalite.broker.settings.broker_config import BrokerConfig
from kafkalite.broker.settings.broker_keys import UnknownConfig, check_key
from kafkalite.broker.settings.listeners import Listener
from kafkalite.broker.settings.sources import env_values
from kafkalite.broker.credentials import ScramCredential, ScramStore, parse_scram_users
from kafkalite.broker.security import build, parse_jaas, parse_mapping_rules, principal_from_dn
from kafkalite.broker.settings.listeners import SecurityConfigError, split_listener_key
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a\\"b" user_bob="pw";'


def _metadata():
    return MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def test_listener_prefixed_keys():
    assert split_listener_key("listener.name.sasl_ssl.plain.sasl.jaas.config") == ("SASL_SSL", "plain.sasl.jaas.config")
    assert split_listener_key("listener.name.mtls.ssl.client.auth") == ("MTLS", "ssl.client.auth")
    assert split_listener_key("num.partitions") is None
    with pytest.raises(SecurityConfigError):
        split_listener_key("listener.name.x.num.partitions")
    check_key("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config")
    with pytest.raises(UnknownConfig):
        check_key("listener.name.sasl_ssl.gssapi.sasl.jaas.config")


def test_listener_keys_from_the_environment():
    env = {"KAFKALITE_LISTENER_NAME_SASL_SSL_PLAIN_SASL_JAAS_CONFIG": JAAS,
           "KAFKALITE_LISTENER_NAME_MTLS_SSL_CLIENT_AUTH": "required",
           "KAFKALITE_SASL_ENABLED_MECHANISMS": "PLAIN"}
    assert env_values(env) == {"listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
                               "listener.name.mtls.ssl.client.auth": "required",
                               "sasl.enabled.mechanisms": "PLAIN"}


def test_jaas_options():
    module, opts = parse_jaas(JAAS)
    assert module == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert opts == {"user_alice": 'a"b', "user_bob": "pw"}
    with pytest.raises(SecurityConfigError):
        parse_jaas("PlainLoginModule user_a=b")


def test_security_per_listener(tmp_path):
    config = BrokerConfig(tmp_path, [Listener("SASL_PLAINTEXT", "127.0.0.1", 0), Listener("INTERNAL", "127.0.0.1", 0)],
                          values={"listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                                  "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
                                  "connections.max.reauth.ms": "5000",
                                  "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "1000"})
    sec = build(config, "SASL_PLAINTEXT")
    assert (sec.protocol, sec.mechanisms) == ("SASL_PLAINTEXT", ("PLAIN", "SCRAM-SHA-512"))
    assert sec.plain_users == {"alice": 'a"b', "bob": "pw"}
    assert sec.reauth_ms == {"PLAIN": 1000, "SCRAM-SHA-512": 5000}
    # a name the protocol map does not list is PLAINTEXT until the map is given, as before
    assert build(config, "INTERNAL").protocol == "PLAINTEXT"
    strict = BrokerConfig(tmp_path, [Listener("INTERNAL", "127.0.0.1", 0)],
                          values={"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"},
                          origins={"listener.security.protocol.map": "cli"})
    with pytest.raises(SecurityConfigError, match="no entry in listener.security.protocol.map"):
        build(strict, "INTERNAL")
    no_key = BrokerConfig(tmp_path, [Listener("SSL", "127.0.0.1", 0)])
    with pytest.raises(SecurityConfigError, match="has no key"):
        build(no_key, "SSL")


def test_principal_mapping_rules():
    rules = parse_mapping_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=admin,O=(.*)$/boss-$1/U, DEFAULT")
    assert principal_from_dn("CN=Kafka-Client,OU=ServiceUsers,O=Acme", rules) == "User:kafka-client"
    assert principal_from_dn("CN=admin,O=acme", rules) == "User:BOSS-ACME"
    assert principal_from_dn("CN=other,O=Acme", rules) == "User:CN=other,O=Acme"
    assert principal_from_dn("CN=x", parse_mapping_rules("DEFAULT")) == "User:CN=x"


def test_scram_users_and_store(tmp_path):
    assert parse_scram_users("SCRAM-SHA-256=[name=alice,password=a-b],SCRAM-SHA-512=[name=bob,iterations=8192,"
                             "password=\"x\"]") == [("SCRAM-SHA-256", "alice", "a-b", 4096),
                                                    ("SCRAM-SHA-512", "bob", "x", 8192)]
    with pytest.raises(ValueError):
        parse_scram_users("SCRAM-SHA-1=[name=a,password=b]")
    with pytest.raises(ValueError):
        parse_scram_users("SCRAM-SHA-256=[name=a,password=b,iterations=10]")
    store = ScramStore(tmp_path)
    store.apply_config("SCRAM-SHA-256=[name=alice,password=alice-secret]")
    cred = store.get("alice", "SCRAM-SHA-256")
    assert cred is not None and cred.iterations == 4096
    # the same password and salt give the same keys: what the client proves it knows
    assert ScramCredential.from_password("SCRAM-SHA-256", "alice-secret", 4096, cred.salt) == cred
    raw = (tmp_path / ScramStore.FILE).read_text()
    assert "alice-secret" not in raw
    assert set(json.loads(raw)["alice"]["SCRAM-SHA-256"]) == {"salt", "stored_key", "server_key", "iterations"}
    again = ScramStore(tmp_path)
    assert again.get("alice", "SCRAM-SHA-256") == cred
    assert again.delete("alice", "SCRAM-SHA-256") and not again.delete("alice", "SCRAM-SHA-256")


def test_self_signed_tls_and_mtls_principal(tmp_path):
    """--tls-self-signed: the ready line names the CA, which verifies the listener's certificate;
    a client certificate signed by it maps to User:<subject> (seen in the debug log)."""
    import trustme

    with suite_brokers.running(listeners=["PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0"], tls_self_signed=True,
                               log_level="DEBUG", config={"ssl.client.auth": "requested",
                                                      "listener.name.ssl.sasl.enabled.mechanisms": "PLAIN"}) as b:
        assert b.ca_path is not None and b.ca_path.exists()
        ctx = ssl.create_default_context(cafile=str(b.ca_path))
        with WireClient(b.listeners["SSL"], ssl_context=ctx) as c:
            assert len(c.request(_metadata()).brokers) == 1
        # a client certificate from another CA is refused; one from the broker's CA is not
        other = trustme.CA().issue_cert("x@acme", common_name="intruder")
        bad = ssl.create_default_context(cafile=str(b.ca_path))
        other.configure_cert(bad)
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            with WireClient(b.listeners["SSL"], ssl_context=bad) as c:
                c.request(_metadata())
        assert "TLS handshake failed" in b.log_text()


def test_mtls_principal_from_config_files(tmp_path):
    import trustme

    from kafkalite.broker.security import pkcs8

    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1")
    client = ca.issue_cert("client@acme", common_name="client", organization_name="Acme")
    ks = tmp_path / "server.pem"
    ks.write_bytes(pkcs8(server.private_key_pem.bytes()) + b"".join(c.bytes() for c in server.cert_chain_pems))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    config = {"ssl.keystore.location": ks, "ssl.truststore.location": tmp_path / "ca.pem",
              "ssl.client.auth": "required", "ssl.key.password": "not-used-but-secret"}
    with suite_brokers.running(listeners=["SSL://127.0.0.1:0"], log_level="DEBUG", config=config) as b:
        ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        client.configure_cert(ctx)
        with WireClient(b.listeners["SSL"], ssl_context=ctx) as c:
            assert len(c.request(_metadata()).brokers) == 1
        log = b.log_text()
        assert "not-used-but-secret" not in log and "ssl.key.password=[hidden]" in log
        # Java's X500Principal.getName() order: most specific first (trustme adds an OU)
        assert re.search(r"principal User:CN=client,(OU=[^,]*,)?O=Acme\n", log), log[-2000:]


def test_stalled_tls_handshake_times_out(tmp_path):
    with suite_brokers.running(listeners=["SSL://127.0.0.1:0"], tls_self_signed=True,
                               config={"ssl.handshake.timeout.ms": 300}) as b:
        host, port = b.listeners["SSL"].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            t0 = time.monotonic()
            assert s.recv(1) == b""  # closed by the broker
            assert 0.2 < time.monotonic() - t0 < 4
        assert "TLS handshake not finished within 0.3 s" in b.log_text()


def test_self_signed_flag_from_the_environment():
    """The container image's way: KAFKALITE_TLS_SELF_SIGNED=true, like every flag's variable."""
    from kafkalite.broker.cli import parse_args
    from kafkalite.broker.settings.layering import resolve

    assert resolve(parse_args([]), {"KAFKALITE_TLS_SELF_SIGNED": "true"}).tls_self_signed
    assert not resolve(parse_args([]), {}).tls_self_signed
    assert resolve(parse_args(["--tls-self-signed"]), {}).tls_self_signed
