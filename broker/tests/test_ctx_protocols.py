"""The request-path checks of broker.authorizer and broker.kafka_versions read a request only
through their Protocols (AuthContext, ReleaseContext): an object with nothing but those attributes
gets the same decisions a RequestContext gets, and a RequestContext has every one of them."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace

from kio.schema.errors import ErrorCode

from kafkalite.broker.authorizer import Acl, AclOperation, AclPermissionType, AuthContext, Authorizer, PatternType
from kafkalite.broker.authorizer import ResourceType as R
from kafkalite.broker.authorizer import allowed, allowed_any, allowed_cluster, allowed_names, operations
from kafkalite.broker.context import RequestContext
from kafkalite.broker.kafka_versions import ReleaseContext, release, unsupported_group_api
from kafkalite.protocol.messages import RequestHeader

ALICE = "User:alice"


def _members(protocol: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(protocol) if not name.startswith("_")}


def test_a_request_context_has_what_the_protocols_read() -> None:
    provided = set(RequestContext.__slots__) | {name for name, value in vars(RequestContext).items()
                                                if isinstance(value, property)}
    assert _members(AuthContext) == {"broker", "principal", "peer"} <= provided
    assert _members(ReleaseContext) == {"broker", "header", "api_version"} <= provided


def test_the_authorisation_checks_read_only_the_principal_the_peer_and_the_authorizer(tmp_path: Path) -> None:
    auth = Authorizer(tmp_path / "acls.json", [], allow_if_no_acl=False)
    auth.create([Acl(int(R.TOPIC), "t", int(PatternType.LITERAL), ALICE, "10.0.0.1", int(AclOperation.WRITE),
                     int(AclPermissionType.ALLOW))])
    alice = SimpleNamespace(broker=SimpleNamespace(authorizer=auth), principal=ALICE, peer="10.0.0.1:5000")
    elsewhere = SimpleNamespace(broker=alice.broker, principal=ALICE, peer="10.0.0.2:5000")
    assert allowed(alice, AclOperation.WRITE, R.TOPIC, "t")
    assert not allowed(elsewhere, AclOperation.WRITE, R.TOPIC, "t")   # the ACL names alice's host
    assert allowed_names(alice, AclOperation.WRITE, R.TOPIC, ["t", "u"]) == {"t"}
    assert allowed_any(alice, AclOperation.WRITE, R.TOPIC) and not allowed_cluster(alice, AclOperation.ALTER)
    # WRITE implies DESCRIBE (StandardAuthorizer)
    assert operations(alice, R.TOPIC, "t", 0) & (1 << AclOperation.DESCRIBE)
    # no authorizer: everything is allowed, at the cost of one attribute load
    nobody = SimpleNamespace(broker=SimpleNamespace(authorizer=None), principal=ALICE, peer="x:1")
    assert allowed(nobody, AclOperation.ALTER, R.CLUSTER, "kafka-cluster")
    assert allowed_names(nobody, AclOperation.READ, R.TOPIC, ["t"]) is None
    assert operations(nobody, R.TOPIC, "t", 123) == 123


def test_the_group_api_refusal_reads_only_the_release_and_the_header() -> None:
    def ctx(name: str | None) -> SimpleNamespace:
        return SimpleNamespace(broker=SimpleNamespace(release=None if name is None else release(name)),
                               header=RequestHeader(68, 0, 1, None), api_version=0)

    assert unsupported_group_api(ctx(None), None) is None
    assert unsupported_group_api(ctx("4.0"), None) is None
    refused = unsupported_group_api(ctx("3.9"), SimpleNamespace(group_id="g", member_id="m"))
    assert refused.error_code == ErrorCode.unsupported_version
