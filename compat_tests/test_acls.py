"""Authorisation with Kafka's ACL model, on kafkalite and on Apache Kafka configured the same way.

The broker runs StandardAuthorizer with ``allow.everyone.if.no.acl.found=true``: what no ACL
covers stays open, and the tests refuse things to the clients' principal (``User:ANONYMOUS`` on
PLAINTEXT) with DENY ACLs on the resources they use. ACLs are created, listed and deleted with
the Java Admin client and confluent-kafka's AdminClient; the refusals are seen through every
client family (Java, librdkafka, kafka-python, aiokafka, kafkajs, kcat).

compat_tests/authorizer.py holds the settings (and the one difference on Apache Kafka: its
controller listener authenticates as a super user), which changes nothing the tests assert.
"""

from __future__ import annotations

import re
import uuid

import pytest

from compat_tests import authorizer, brokers
from compat_tests.authorizer import ANONYMOUS
from compat_tests.clients import load_adapter
from compat_tests.clients.admin import BrokerError
from compat_tests.clients.base import Msg
from compat_tests.waiting import wait_for_poll_error, wait_until

pytestmark = [pytest.mark.security, pytest.mark.timeout(180)]

ANY_ACL = ("ANY", None, "ANY", None, None, "ANY", "ANY")


def secured_config(super_users: str = "User:admin") -> dict[str, str]:
    return authorizer.secured_config(brokers.on_kafka(), super_users)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    brokers.requires_own_broker("brokers with an authorizer")
    with brokers.start(tmp_path_factory.mktemp("secured"), secured_config()) as b:
        yield b


@pytest.fixture
def rd_admin(secured):
    """confluent-kafka's AdminClient on the module's broker; the test leaves no ACL behind."""
    from compat_tests.clients.librdkafka import LibrdkafkaAdmin

    admin = LibrdkafkaAdmin(secured.bootstrap)
    yield admin
    admin.delete_acls([ANY_ACL])
    wait_until(lambda: not admin.describe_acls(ANY_ACL), what="every ACL deleted")


def grant(admin, *acls: tuple) -> None:
    """Create ACLs and wait until the broker answering requests applies them (Apache Kafka's
    brokers learn them from the metadata log, a moment after the controller)."""
    admin.create_acls(list(acls))
    wait_until(lambda: set(acls) <= admin.describe_acls(ANY_ACL), what=f"ACLs {acls} in effect")


def name(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex[:10]}"


def deny(rtype: str, resource: str, op: str, pattern: str = "LITERAL") -> tuple:
    return (rtype, resource, pattern, ANONYMOUS, "*", op, "DENY")


def allow_all(rtype: str, resource: str, pattern: str = "LITERAL") -> tuple:
    return (rtype, resource, pattern, ANONYMOUS, "*", "ALL", "ALLOW")


def refuse(rtype: str, resource: str, op: str, pattern: str = "LITERAL") -> tuple[tuple, tuple]:
    """Everything on the resource but `op`. Once any ACL applies to a resource,
    allow.everyone.if.no.acl.found no longer does: what no ACL allows there is denied."""
    return allow_all(rtype, resource, pattern), deny(rtype, resource, op, pattern)


def java_admin(bootstrap):
    from compat_tests.clients.java import JavaAdmin

    return JavaAdmin(bootstrap)


def rdkafka_admin(bootstrap):
    from compat_tests.clients.librdkafka import LibrdkafkaAdmin

    return LibrdkafkaAdmin(bootstrap)


ACL_ADMINS = [pytest.param(java_admin, marks=pytest.mark.java, id="java"),
              pytest.param(rdkafka_admin, marks=pytest.mark.librdkafka, id="librdkafka")]


# --- the ACL APIs ------------------------------------------------------------------------------

@pytest.mark.parametrize("make_admin", ACL_ADMINS)
def test_acls_created_described_and_deleted_with_filters(make_admin, secured, rd_admin):
    admin = make_admin(secured.bootstrap)
    literal = ("TOPIC", "orders-eu", "LITERAL", "User:alice", "*", "READ", "ALLOW")
    prefixed = ("TOPIC", "orders-", "PREFIXED", "User:bob", "*", "WRITE", "ALLOW")
    wildcard = ("TOPIC", "*", "LITERAL", "User:carol", "127.0.0.1", "DESCRIBE", "DENY")
    group = ("GROUP", "billing", "LITERAL", "User:alice", "*", "ALL", "ALLOW")
    other = ("TOPIC", "payments", "LITERAL", "User:alice", "*", "READ", "ALLOW")
    admin.create_acls([literal, prefixed, wildcard, group, other])
    wait_until(lambda: admin.describe_acls(ANY_ACL) == {literal, prefixed, wildcard, group, other})

    # MATCH: every pattern that covers the named resource (literal, wildcard, prefix)
    assert admin.describe_acls(("TOPIC", "orders-eu", "MATCH", None, None, "ANY", "ANY")) == {
        literal, prefixed, wildcard}
    # a pattern type filters exactly; ANY with a name matches that name as it is written
    assert admin.describe_acls(("TOPIC", None, "PREFIXED", None, None, "ANY", "ANY")) == {prefixed}
    assert admin.describe_acls(("TOPIC", "orders-", "ANY", None, None, "ANY", "ANY")) == {prefixed}
    assert admin.describe_acls(("ANY", None, "ANY", "User:alice", None, "ANY", "ANY")) == {literal, group, other}
    assert admin.describe_acls(("ANY", None, "ANY", None, None, "ANY", "DENY")) == {wildcard}
    assert admin.describe_acls(("GROUP", None, "ANY", None, None, "READ", "ANY")) == set()

    # deleting by filter returns what each filter removed
    assert admin.delete_acls([("TOPIC", "orders-eu", "MATCH", None, None, "ANY", "ALLOW")]) == {literal, prefixed}
    wait_until(lambda: admin.describe_acls(ANY_ACL) == {wildcard, group, other})
    assert admin.delete_acls([("TOPIC", "nothing", "LITERAL", None, None, "ANY", "ANY")]) == set()


@pytest.mark.java
def test_acl_apis_without_an_authorizer_answer_security_disabled(bootstrap):
    """The suite's plain broker has no authorizer.class.name. (librdkafka drops DescribeAcls'
    error code and reports an empty list; compat_tests/differ compares the raw answers.)"""
    admin = java_admin(bootstrap)
    with pytest.raises(BrokerError) as e:
        admin.describe_acls(ANY_ACL)
    assert e.value.code == "SECURITY_DISABLED"
    with pytest.raises(BrokerError) as e:
        admin.create_acls([("TOPIC", "t", "LITERAL", "User:x", "*", "READ", "ALLOW")])
    assert e.value.code == "SECURITY_DISABLED"


@pytest.mark.restart
def test_acls_survive_a_restart(start_broker, tmp_path):
    b = start_broker(config=secured_config())
    admin = rdkafka_admin(b.bootstrap)
    topic = name("kept")
    acls = {*refuse("TOPIC", topic, "WRITE"), ("GROUP", "g-", "PREFIXED", "User:bob", "*", "READ", "ALLOW")}
    grant(admin, *acls)
    b.restart()
    admin = rdkafka_admin(b.bootstrap)
    assert admin.describe_acls(ANY_ACL) == acls
    client = load_adapter("librdkafka")(b.bootstrap)
    client.create_topic(topic)
    with pytest.raises(Exception) as info:
        client.produce(topic, [Msg(key=b"k", value=b"v")], config={"message.send.max.retries": 0})
    assert getattr(info.value, "code", None) == "TOPIC_AUTHORIZATION_FAILED", info.value


def test_super_users_are_never_refused(start_broker):
    b = start_broker(config=secured_config(super_users=f"User:admin;{ANONYMOUS}"))
    admin = rdkafka_admin(b.bootstrap)
    topic = name("super")
    grant(admin, deny("TOPIC", topic, "ALL"), *refuse("CLUSTER", "kafka-cluster", "CREATE"))
    client = load_adapter("librdkafka")(b.bootstrap)
    client.create_topic(topic)
    assert client.produce(topic, [Msg(key=b"k", value=b"v")])[0].offset == 0
    assert [m.value for m in client.consume(topic, [0], 1)] == [b"v"]


# --- what each client sees when refused ---------------------------------------------------------

# the client families and how each reports Kafka's TOPIC_AUTHORIZATION_FAILED
REFUSED_PRODUCE = {
    "java": r"TOPIC_AUTHORIZATION_FAILED",
    "librdkafka": r"TOPIC_AUTHORIZATION_FAILED",
    "kafka_python": r"TopicAuthorizationFailedError",
    "aiokafka": r"TopicAuthorizationFailedError",
    "kafkajs": r"TOPIC_AUTHORIZATION_FAILED|[Nn]ot authorized to access topics",
    "kcat": r"[Tt]opic authorization failed|TOPIC_AUTHORIZATION_FAILED",
}
NO_RETRIES = {"java": {"retries": 0}, "librdkafka": {"message.send.max.retries": 0}}


def _described(exc: BaseException) -> str:
    parts = [type(exc).__name__, str(exc), str(getattr(exc, "code", "") or "")]
    for attr in ("type", "stderr", "message"):
        parts.append(str(getattr(exc, attr, "") or ""))
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        parts.append(_described(cause))
    return " ".join(parts)


@pytest.mark.parametrize("adapter", [pytest.param(n, marks=getattr(pytest.mark, n), id=n) for n in REFUSED_PRODUCE])
def test_produce_to_a_topic_without_write_is_refused(adapter, secured, rd_admin):
    topic = name("nowrite")
    load_adapter("librdkafka")(secured.bootstrap).create_topic(topic)
    grant(rd_admin, *refuse("TOPIC", topic, "WRITE"))
    client = load_adapter(adapter)(secured.bootstrap)
    kwargs = {"config": NO_RETRIES[adapter]} if adapter in NO_RETRIES else {}
    try:
        with pytest.raises(Exception) as info:
            client.produce(topic, [Msg(key=b"k", value=b"refused")], **kwargs)
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            close()
    assert re.search(REFUSED_PRODUCE[adapter], _described(info.value)), _described(info.value)
    # nothing was appended: with the ACL gone the first record lands at offset 0
    rd_admin.delete_acls([ANY_ACL])
    wait_until(lambda: not rd_admin.describe_acls(ANY_ACL))
    rd = load_adapter("librdkafka")(secured.bootstrap)
    assert rd.produce(topic, [Msg(key=b"k", value=b"allowed")])[0].offset == 0


@pytest.mark.librdkafka
def test_metadata_hides_topics_the_principal_may_not_describe(secured, rd_admin):
    shown, hidden = name("shown"), name("hidden")
    rd = load_adapter("librdkafka")(secured.bootstrap)
    rd.create_topic(shown)
    rd.create_topic(hidden)
    grant(rd_admin, *refuse("TOPIC", hidden, "DESCRIBE"))
    listed = rd_admin.list_topics()
    assert shown in listed and hidden not in listed
    with pytest.raises(BrokerError) as e:
        rd_admin.describe_topics([hidden])
    assert e.value.code == "TOPIC_AUTHORIZATION_FAILED"
    # a name the principal may not describe is refused whether or not it exists
    grant(rd_admin, *refuse("TOPIC", "absent-", "DESCRIBE", "PREFIXED"))
    with pytest.raises(BrokerError) as e:
        rd_admin.describe_topics(["absent-" + uuid.uuid4().hex[:6]])
    assert e.value.code == "TOPIC_AUTHORIZATION_FAILED"


@pytest.mark.java
def test_java_admin_sees_topic_authorization_failed_for_hidden_topics(secured, rd_admin):
    hidden = name("hidden")
    load_adapter("librdkafka")(secured.bootstrap).create_topic(hidden)
    grant(rd_admin, *refuse("TOPIC", hidden, "DESCRIBE"))
    admin = java_admin(secured.bootstrap)
    assert hidden not in admin.list_topics()
    with pytest.raises(BrokerError) as e:
        admin.describe_topics([hidden])
    assert e.value.code == "TOPIC_AUTHORIZATION_FAILED"


@pytest.mark.librdkafka
def test_transactional_producer_refused_its_id_then_allowed(secured, rd_admin):
    from confluent_kafka import Consumer, KafkaException, Producer

    topic, tid = name("txn"), name("tid")
    load_adapter("librdkafka")(secured.bootstrap).create_topic(topic)
    grant(rd_admin, *refuse("TRANSACTIONAL_ID", tid, "WRITE"))
    conf = {"bootstrap.servers": secured.bootstrap, "transactional.id": tid, "transaction.timeout.ms": 30000}
    refused = Producer(conf)
    with pytest.raises(KafkaException) as info:
        refused.init_transactions(30)
    assert info.value.args[0].name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", info.value
    del refused

    rd_admin.delete_acls([ANY_ACL])
    wait_until(lambda: not rd_admin.describe_acls(ANY_ACL))
    producer = Producer(conf)
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"committed")
    producer.commit_transaction(30)
    consumer = Consumer({"bootstrap.servers": secured.bootstrap, "group.id": name("g"),
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    try:
        consumer.subscribe([topic])
        got = []
        wait_until(lambda: got.extend(m for m in [consumer.poll(0.5)] if m is not None and not m.error()) or got,
                   timeout=30)
        assert got[0].value() == b"committed"
    finally:
        consumer.close()


@pytest.mark.librdkafka
def test_idempotent_producer_needs_idempotent_write_or_write_on_some_topic(secured, rd_admin):
    """KIP-679: InitProducerId without a transactional id is allowed with IDEMPOTENT_WRITE on the
    cluster or WRITE on any topic; with neither it is CLUSTER_AUTHORIZATION_FAILED."""
    from confluent_kafka import KafkaException, Producer

    topic = name("idem")
    load_adapter("librdkafka")(secured.bootstrap).create_topic(topic)
    grant(rd_admin,
          ("CLUSTER", "kafka-cluster", "LITERAL", ANONYMOUS, "*", "ALL", "ALLOW"),
          deny("CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE"),
          *refuse("TOPIC", "*", "WRITE"))
    errors = []
    producer = Producer({"bootstrap.servers": secured.bootstrap, "enable.idempotence": True,
                         "error_cb": errors.append})
    producer.produce(topic, value=b"refused")

    def failed(producer=producer):
        try:
            producer.poll(0.2)
        except KafkaException as e:  # librdkafka raises the fatal error from poll
            errors.append(e.args[0])
        return errors

    wait_until(failed, timeout=30, what="an error from the producer")
    assert any(e.name() == "CLUSTER_AUTHORIZATION_FAILED" for e in errors), errors
    producer.purge()
    producer.flush(1)
    del producer

    # WRITE on some topic is enough again once the wildcard denial is gone
    rd_admin.delete_acls([("TOPIC", "*", "LITERAL", None, None, "ANY", "ANY")])
    wait_until(lambda: deny("TOPIC", "*", "WRITE") not in rd_admin.describe_acls(ANY_ACL))
    rd = load_adapter("librdkafka")(secured.bootstrap)
    assert rd.produce(topic, [Msg(key=b"k", value=b"ok")], idempotent=True)[0].offset == 0


@pytest.mark.librdkafka
def test_consumer_group_without_read_is_refused(secured, rd_admin):
    from confluent_kafka import Consumer

    topic, group = name("grp"), name("group")
    load_adapter("librdkafka")(secured.bootstrap).create_topic(topic)
    grant(rd_admin, *refuse("GROUP", group, "READ"))
    consumer = Consumer({"bootstrap.servers": secured.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        wait_for_poll_error(consumer, "GROUP_AUTHORIZATION_FAILED", 30, "GROUP_AUTHORIZATION_FAILED")
    finally:
        consumer.close()
