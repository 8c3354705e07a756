"""Delegation tokens (KIP-48) with the Java client on kafkalite and on Apache Kafka
(COMPAT_BROKER=kafka), on a SASL_PLAINTEXT listener with SCRAM users and a token secret key:
alice creates a token with bob as renewer, describes it, renews it; a producer authenticates with
the token (SCRAM with tokenauth=true) and writes as alice; bob renews it, the expired token no
longer authenticates; a connection that authenticated with a token may not create one."""

from __future__ import annotations

import uuid

import pytest

from compat_tests import brokers
from compat_tests.clients.base import Msg
from compat_tests.clients.java import JavaClient, JavaError
from compat_tests.waiting import wait_until

pytestmark = [pytest.mark.security, pytest.mark.timeout(240)]

LISTENERS = {"SASL_PLAINTEXT": "SASL_PLAINTEXT"}
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SCRAM_USERS = ("SCRAM-SHA-256=[name=alice,password=alice-secret],SCRAM-SHA-256=[name=bob,password=bob-secret],"
               "SCRAM-SHA-256=[name=carol,password=carol-secret]")
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}


def scram(user: str, password: str | None = None, token: bool = False) -> dict[str, str]:
    extra = " tokenauth=true" if token else ""
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                f'username="{user}" password="{password or PASSWORDS[user]}"{extra};'}


@pytest.fixture(scope="module")
def address():
    brokers.requires_own_broker("a broker with SCRAM users and a delegation token key")
    config = {"sasl.enabled.mechanisms": "SCRAM-SHA-256",
              "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
              "scram.users": SCRAM_USERS, "delegation.token.secret.key": "kafkalite-token-key"}
    with brokers.start(config=config, listeners=LISTENERS) as b:
        yield b.listener("SASL_PLAINTEXT")


def test_token_lifecycle_and_authentication(address):
    alice, bob = JavaClient(address, config=scram("alice")), JavaClient(address, config=scram("bob"))
    (token,) = alice.admin({"op": "createDelegationToken", "renewers": ["User:bob"]})
    assert (token["owner"], token["requester"], token["renewers"]) == ("User:alice", "User:alice", ["User:bob"])
    assert token["issue"] < token["expiry"] <= token["max"]

    def described():
        (tokens,) = alice.admin({"op": "describeDelegationToken"})
        return [t for t in tokens if t["token_id"] == token["token_id"]]
    assert wait_until(described, timeout=20, what="the token to be described")[0]["hmac"] == token["hmac"]

    # With no authorizer every principal may describe every token (Kafka's DESCRIBE on the token
    # and DESCRIBE_TOKENS on its owner are granted); an owners filter matches the owner, the
    # requester or a renewer (TokenInformation.ownerOrRenewer)
    carol = JavaClient(address, config=scram("carol"))

    def ids(client: JavaClient, owners=None) -> set[str]:
        (tokens,) = client.admin({"op": "describeDelegationToken", "owners": owners})
        return {t["token_id"] for t in tokens}
    assert token["token_id"] in ids(carol)
    assert token["token_id"] in ids(carol, ["User:bob"])
    assert token["token_id"] not in ids(carol, ["User:carol"])
    assert ids(carol, []) == set()
    (renewed,) = bob.admin({"op": "renewDelegationToken", "hmac": token["hmac"], "period_ms": 3_600_000})
    assert renewed > token["issue"]

    topic = f"tokens-{uuid.uuid4().hex[:6]}"
    alice.create_topic(topic)
    with_token = JavaClient(address, config=scram(token["token_id"], token["hmac"], token=True))
    (written,) = with_token.produce(topic, [Msg(b"k", b"by token")])
    assert written.offset == 0
    (refused,) = with_token.admin({"op": "createDelegationToken", "renewers": []}, raise_errors=False)
    assert isinstance(refused, JavaError) and refused.code == "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"

    alice.admin({"op": "expireDelegationToken", "hmac": token["hmac"], "period_ms": -1})
    wait_until(lambda: described() == [], timeout=20, what="the token to be gone")
    gone = JavaClient(address, config={**scram(token["token_id"], token["hmac"], token=True),
                                       "default.api.timeout.ms": 5000, "request.timeout.ms": 4000})
    (failed,) = gone.admin({"op": "describeCluster"}, raise_errors=False, timeout=30)
    assert isinstance(failed, JavaError) and failed.code == "SASL_AUTHENTICATION_FAILED"
