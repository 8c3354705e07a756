"""Two users on a SASL_PLAINTEXT listener with ACLs: alice is granted a topic, a group and a
transactional id; bob, who authenticates just as well, is refused each with Kafka's error.

One broker for the module, on kafkalite and on Apache Kafka configured the same way
(compat_tests/authorizer.py): StandardAuthorizer, ``super.users=User:admin``,
``allow.everyone.if.no.acl.found=true`` (so the ACLs on alice's resources are what closes them
to bob), PLAIN users from the listener's JAAS config and SCRAM-SHA-256 users made at start.
The admin creates the topic and the ACLs through the Java Admin client over SASL.
"""

from __future__ import annotations

import re
import uuid

import pytest

from compat_tests import authorizer, brokers
from compat_tests.clients.base import Msg
from compat_tests.waiting import wait_for_poll_error, wait_until

pytestmark = [pytest.mark.security, pytest.mark.timeout(240)]

LISTENERS = {"SASL_PLAINTEXT": "SASL_PLAINTEXT"}
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" ' + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items()) + ";")
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SCRAM_USERS = "SCRAM-SHA-256=[name=alice,password=alice-secret],SCRAM-SHA-256=[name=bob,password=bob-secret]"
ANY_ACL = ("ANY", None, "ANY", None, None, "ANY", "ANY")


def _name(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex[:8]}"


TOPIC, GROUP, TXN_ID = _name("alices-topic"), _name("alices-group"), _name("alices-tid")
GRANTS = {
    ("TOPIC", TOPIC, "LITERAL", "User:alice", "*", "READ", "ALLOW"),
    ("TOPIC", TOPIC, "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
    ("GROUP", GROUP, "LITERAL", "User:alice", "*", "READ", "ALLOW"),
    ("TRANSACTIONAL_ID", TXN_ID, "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
}


def java_props(user: str, mechanism: str = "PLAIN") -> dict[str, str]:
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{module} required username="{user}" password="{PASSWORDS[user]}";'}


def rdkafka_conf(user: str, mechanism: str = "PLAIN") -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": PASSWORDS[user]}


@pytest.fixture(scope="module")
def secured():
    brokers.requires_own_broker("a broker with SASL users and an authorizer")
    config = {**authorizer.secured_config(brokers.on_kafka()),
              "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
              "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
              "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
              "scram.users": SCRAM_USERS}
    if "listener.security.protocol.map" in config:
        # Apache Kafka's map (its controller listener authenticates) names every listener
        config["listener.security.protocol.map"] += "".join(f",{n}:{p}" for n, p in LISTENERS.items())
    with brokers.start(config=config, listeners=LISTENERS) as b:
        from compat_tests.clients.java import JavaAdmin

        address = b.listener("SASL_PLAINTEXT")
        admin = JavaAdmin(address, config=java_props("admin"))
        admin.create_topic(TOPIC)
        admin.create_acls(sorted(GRANTS))
        # Apache Kafka's broker applies ACLs a moment after its controller commits them
        wait_until(lambda: GRANTS <= admin.describe_acls(ANY_ACL), what="alice's ACLs in effect")
        yield address


def _described(exc: BaseException) -> str:
    parts = [type(exc).__name__, str(exc), str(getattr(exc, "code", "") or "")]
    cause = exc.__cause__ or exc.__context__
    return " ".join(parts + ([_described(cause)] if cause is not None else []))


@pytest.mark.java
def test_java_alice_produces_and_reads_bob_is_refused(secured):
    from compat_tests.clients.java import JavaClient

    alice = JavaClient(secured, config=java_props("alice"))
    first = alice.produce(TOPIC, [Msg(key=b"k", value=b"java-alice")])[0].offset
    assert [m.value for m in alice.consume(TOPIC, [0], 1, start=first)] == [b"java-alice"]
    bob = JavaClient(secured, config=java_props("bob"))
    with pytest.raises(Exception) as info:
        bob.produce(TOPIC, [Msg(key=b"k", value=b"java-bob")], config={"retries": 0}, timeout=20)
    assert re.search("TOPIC_AUTHORIZATION_FAILED", _described(info.value)), _described(info.value)
    # nothing of bob's was appended
    assert alice.produce(TOPIC, [Msg(key=b"k", value=b"after")])[0].offset == first + 1


@pytest.mark.librdkafka
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_librdkafka_alice_produces_and_reads_bob_is_refused(secured, mechanism):
    from compat_tests.clients.librdkafka import LibrdkafkaClient

    alice = LibrdkafkaClient(secured, config=rdkafka_conf("alice", mechanism))
    first = alice.produce(TOPIC, [Msg(key=b"k", value=b"rd-alice")])[0].offset
    assert [m.value for m in alice.consume(TOPIC, [0], 1, start=first)] == [b"rd-alice"]
    bob = LibrdkafkaClient(secured, config=rdkafka_conf("bob", mechanism))
    with pytest.raises(Exception) as info:
        bob.produce(TOPIC, [Msg(key=b"k", value=b"rd-bob")], config={"message.send.max.retries": 0})
    assert getattr(info.value, "code", None) == "TOPIC_AUTHORIZATION_FAILED", _described(info.value)


def _group_consumer(bootstrap: str, user: str, errors: list[str]):
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, **rdkafka_conf(user),
                     "error_cb": lambda e: errors.append(e.name())})


@pytest.mark.librdkafka
def test_bob_may_not_join_alices_group(secured):
    errors: list[str] = []
    bob = _group_consumer(secured, "bob", errors)
    try:
        bob.subscribe([TOPIC])
        wait_for_poll_error(bob, "GROUP_AUTHORIZATION_FAILED", 60, "GROUP_AUTHORIZATION_FAILED for bob", errors)
    finally:
        bob.close()
    from compat_tests.clients.librdkafka import LibrdkafkaClient

    LibrdkafkaClient(secured, config=rdkafka_conf("alice")).produce(TOPIC, [Msg(key=b"k", value=b"for-the-group")])
    alice_errors: list[str] = []
    alice = _group_consumer(secured, "alice", alice_errors)
    try:
        alice.subscribe([TOPIC])
        got: list = []
        wait_until(lambda: got.extend(m for m in [alice.poll(0.5)] if m is not None and not m.error()) or got,
                   timeout=60, what="a record for alice's group")
        alice.commit(got[0], asynchronous=False)
    finally:
        alice.close()
    assert "GROUP_AUTHORIZATION_FAILED" not in alice_errors


@pytest.mark.librdkafka
def test_transactional_id_is_alices_only(secured):
    from confluent_kafka import KafkaException, Producer

    conf = {"bootstrap.servers": secured, "transactional.id": TXN_ID, "transaction.timeout.ms": 30000}
    bob = Producer({**conf, **rdkafka_conf("bob")})
    with pytest.raises(KafkaException) as info:
        bob.init_transactions(30)
    assert info.value.args[0].name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", info.value
    del bob

    alice = Producer({**conf, **rdkafka_conf("alice")})
    alice.init_transactions(30)
    alice.begin_transaction()
    alice.produce(TOPIC, key=b"k", value=b"committed-by-alice")
    alice.commit_transaction(30)
    wait_committed(secured, b"committed-by-alice")


def wait_committed(bootstrap: str, value: bytes) -> None:
    """A read_committed reader (the admin) sees `value` in the topic."""
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": _name("reader"), "enable.auto.commit": False,
                       "isolation.level": "read_committed", **rdkafka_conf("admin")})
    try:
        reader.assign([TopicPartition(TOPIC, 0, 0)])
        seen: list[bytes] = []
        wait_until(lambda: seen.extend(m.value() for m in [reader.poll(0.5)] if m is not None and not m.error())
                   or value in seen, timeout=60, what=f"committed record {value!r}")
    finally:
        reader.close()


@pytest.mark.java
def test_java_transactional_id_is_alices_only(secured):
    from compat_tests.txn import java_txn

    plan = [{"records": [[TOPIC, 0, "java-txn"]], "end": "commit"}]
    with pytest.raises(Exception) as info:
        java_txn.run(secured, "plan", config=java_props("bob"), transactional_id=TXN_ID, txns=plan)
    assert re.search("TRANSACTIONAL_ID_AUTHORIZATION_FAILED|TransactionalIdAuthorization",
                     _described(info.value)), _described(info.value)
    java_txn.run(secured, "plan", config=java_props("alice"), transactional_id=TXN_ID, txns=plan)
    wait_committed(secured, b"java-txn")
