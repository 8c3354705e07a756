"""The authorisation rule (broker.authorizer) on its own: StandardAuthorizer's decisions, the
KIP-679 rule for the idempotent producer, filters, and ACLs kept across a restart."""

from __future__ import annotations

import pytest

from kafkalite.broker.authorizer import (Acl, AclFilter, Authorizer, validate_new_acl)
from kafkalite.broker.authorizer import AclOperation as O
from kafkalite.broker.authorizer import AclPermissionType as P
from kafkalite.broker.authorizer import PatternType as PT
from kafkalite.broker.authorizer import ResourceType as R

ALICE, BOB, ANON = "User:alice", "User:bob", "User:ANONYMOUS"
HOST = "127.0.0.1"


def acl(rtype, name, op, perm=P.ALLOW, principal=ALICE, pattern=PT.LITERAL, host="*") -> Acl:
    return Acl(int(rtype), name, int(pattern), principal, host, int(op), int(perm))


@pytest.fixture
def auth(tmp_path):
    return Authorizer(tmp_path / "acls.json", ["User:admin"], allow_if_no_acl=False)


def test_no_acl_means_the_default(tmp_path):
    closed = Authorizer(tmp_path / "a.json", [], allow_if_no_acl=False)
    open_ = Authorizer(tmp_path / "b.json", [], allow_if_no_acl=True)
    assert not closed.authorize(ALICE, HOST, O.READ, R.TOPIC, "t")
    assert open_.authorize(ALICE, HOST, O.READ, R.TOPIC, "t")


def test_any_acl_on_a_resource_ends_allow_everyone(tmp_path):
    """StandardAuthorizer: once an ACL applies to the resource, whoever it names, what no ACL
    allows there is denied, even with allow.everyone.if.no.acl.found."""
    a = Authorizer(tmp_path / "a.json", [], allow_if_no_acl=True)
    a.create([acl(R.TOPIC, "t", O.READ, principal=BOB)])
    assert not a.authorize(ALICE, HOST, O.READ, R.TOPIC, "t")
    assert a.authorize(BOB, HOST, O.READ, R.TOPIC, "t")
    assert a.authorize(ALICE, HOST, O.READ, R.TOPIC, "other")


def test_implied_operations(auth):
    auth.create([acl(R.TOPIC, "t", O.WRITE), acl(R.TOPIC, "c", O.ALTER_CONFIGS)])
    assert auth.authorize(ALICE, HOST, O.WRITE, R.TOPIC, "t")
    assert auth.authorize(ALICE, HOST, O.DESCRIBE, R.TOPIC, "t")  # WRITE implies DESCRIBE
    assert not auth.authorize(ALICE, HOST, O.READ, R.TOPIC, "t")
    assert auth.authorize(ALICE, HOST, O.DESCRIBE_CONFIGS, R.TOPIC, "c")
    assert not auth.authorize(ALICE, HOST, O.DESCRIBE, R.TOPIC, "c")


def test_deny_wins_and_denies_only_its_operation(auth):
    auth.create([acl(R.TOPIC, "t", O.ALL), acl(R.TOPIC, "t", O.READ, P.DENY)])
    assert not auth.authorize(ALICE, HOST, O.READ, R.TOPIC, "t")
    assert auth.authorize(ALICE, HOST, O.WRITE, R.TOPIC, "t")
    assert auth.authorize(ALICE, HOST, O.DESCRIBE, R.TOPIC, "t")  # a DENY READ implies nothing


def test_prefixed_wildcard_principal_and_host(auth):
    auth.create([acl(R.GROUP, "team-", O.READ, pattern=PT.PREFIXED, principal="User:*"),
                 acl(R.TOPIC, "*", O.DESCRIBE, host="10.0.0.1"),
                 acl(R.TOPIC, "secret-", O.DESCRIBE, P.DENY, pattern=PT.PREFIXED)])
    assert auth.authorize(BOB, HOST, O.READ, R.GROUP, "team-a")
    assert not auth.authorize(BOB, HOST, O.READ, R.GROUP, "team")
    assert auth.authorize(ALICE, "10.0.0.1", O.DESCRIBE, R.TOPIC, "x")
    assert not auth.authorize(ALICE, HOST, O.DESCRIBE, R.TOPIC, "x")
    assert not auth.authorize(ALICE, "10.0.0.1", O.DESCRIBE, R.TOPIC, "secret-x")


def test_super_users_are_allowed_everything(auth):
    auth.create([acl(R.CLUSTER, "kafka-cluster", O.ALL, P.DENY, principal="User:*")])
    assert auth.authorize("User:admin", HOST, O.ALTER, R.CLUSTER, "kafka-cluster")
    assert not auth.authorize(ALICE, HOST, O.ALTER, R.CLUSTER, "kafka-cluster")


def test_write_on_some_topic_kip_679(auth):
    assert not auth.authorized_for_any(ALICE, HOST, O.WRITE, R.TOPIC)
    auth.create([acl(R.TOPIC, "orders", O.WRITE)])
    assert auth.authorized_for_any(ALICE, HOST, O.WRITE, R.TOPIC)
    auth.create([acl(R.TOPIC, "ord", O.WRITE, P.DENY, pattern=PT.PREFIXED)])
    assert not auth.authorized_for_any(ALICE, HOST, O.WRITE, R.TOPIC)  # a denied prefix dominates it
    auth.create([acl(R.TOPIC, "p-", O.ALL, pattern=PT.PREFIXED)])
    assert auth.authorized_for_any(ALICE, HOST, O.WRITE, R.TOPIC)
    auth.create([acl(R.TOPIC, "*", O.WRITE, P.DENY)])
    assert not auth.authorized_for_any(ALICE, HOST, O.WRITE, R.TOPIC)


def test_filters(auth):
    lit = acl(R.TOPIC, "orders-eu", O.READ)
    pre = acl(R.TOPIC, "orders-", O.WRITE, P.DENY, pattern=PT.PREFIXED, principal=BOB)
    star = acl(R.TOPIC, "*", O.DESCRIBE)
    auth.create([lit, pre, star])

    def f(name, pattern, principal=None, op=O.ANY, perm=P.ANY, rtype=R.TOPIC):
        return set(auth.acls(AclFilter(int(rtype), name, int(pattern), principal, None, int(op), int(perm))))

    assert f("orders-eu", PT.MATCH) == {lit, pre, star}
    assert f("orders-", PT.ANY) == {pre}
    assert f(None, PT.PREFIXED) == {pre}
    assert f(None, PT.ANY, principal=BOB) == {pre}
    assert f(None, PT.ANY, perm=P.ALLOW) == {lit, star}
    assert f(None, PT.ANY, rtype=R.GROUP) == set()
    assert auth.delete([AclFilter(int(R.TOPIC), "orders-eu", int(PT.MATCH), None, None, int(O.ANY),
                                  int(P.DENY))]) == [[pre]]
    assert set(auth.acls(AclFilter(int(R.ANY), None, int(PT.ANY), None, None, int(O.ANY), int(P.ANY)))) == {
        lit, star}


def test_acls_survive_a_restart(tmp_path):
    path = tmp_path / "__cluster_metadata" / "acls.json"
    first = Authorizer(path, [], allow_if_no_acl=False)
    kept = acl(R.TRANSACTIONAL_ID, "tx-", O.WRITE, pattern=PT.PREFIXED)
    first.create([kept, acl(R.GROUP, "g", O.READ)])
    first.delete([AclFilter(int(R.GROUP), None, int(PT.ANY), None, None, int(O.ANY), int(P.ANY))])
    again = Authorizer(path, [], allow_if_no_acl=False)
    again.load()
    assert again.acls(AclFilter(int(R.ANY), None, int(PT.ANY), None, None, int(O.ANY), int(P.ANY))) == [kept]
    assert again.authorize(ALICE, HOST, O.WRITE, R.TRANSACTIONAL_ID, "tx-1")


def test_validation_messages():
    assert validate_new_acl(acl(R.CLUSTER, "other", O.ALTER)) == \
        "The only valid name for the CLUSTER resource is kafka-cluster"
    assert validate_new_acl(acl(R.TOPIC, "", O.READ)) == "Invalid empty resource name"
    assert validate_new_acl(acl(R.TOPIC, "t", O.READ)) is None
    assert validate_new_acl(acl(R.CLUSTER, "kafka-cluster", O.IDEMPOTENT_WRITE)) is None
