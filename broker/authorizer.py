"""Authorisation with Kafka's ACL model: the one owner of the rule.

Enabled as on Kafka by `authorizer.class.name` (StandardAuthorizer's class name); without it
the broker has no authorizer (`Broker.authorizer is None`), every request is allowed and the
ACL APIs answer SECURITY_DISABLED.

An ACL binds a resource pattern (resource type, name, pattern type LITERAL or PREFIXED) to an
entry (principal, host, operation, permission). The decision for a principal, a host, an
operation and one named resource is StandardAuthorizer's:
- a principal listed in `super.users` (`;`-separated `User:name`) is allowed everything;
- the ACLs that apply to the resource are those whose pattern matches its name: LITERAL by
  equality or the wildcard `*`, PREFIXED by prefix. Among them an entry matches when its
  principal is the request's or `User:*`, its host is the peer's address or `*`, and its
  operation is the one asked for or ALL. An ALLOW entry for READ, WRITE, DELETE or ALTER also
  allows DESCRIBE, one for ALTER_CONFIGS also DESCRIBE_CONFIGS; a DENY entry denies only its
  own operation (or every one, for ALL);
- a matching DENY wins over any ALLOW; a matching ALLOW allows;
- when no ACL at all applies to the resource (whoever it names), the answer is
  `allow.everyone.if.no.acl.found` (default false); when some apply but none matches, denied.

`authorized_for_any` is Kafka's authorizeByResourceType (KIP-679): may the principal perform
an operation on at least one resource of a type (the idempotent producer's WRITE on some
topic), with denials by literal name or dominating prefix taken into account.

ACLs persist in `__cluster_metadata/acls.json` of the data directory, written atomically on
every change, and are read back when the broker starts. All or nothing: the ACLs are saved as
they will be before memory changes; a save that fails (a full disk) raises OSError with the ACLs
as they were, and the handler answers KAFKA_STORAGE_ERROR (broker.all_or_nothing).
"""

from __future__ import annotations

import enum
import json
import logging
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Iterable, Protocol

from kio.schema.errors import ErrorCode

from kafkalite.storage.files import write_atomic


log = logging.getLogger("kafkalite.authorizer")

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# the class name Kafka's ZooKeeper-era brokers used; accepted for configs carried over
LEGACY_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ACCEPTED_AUTHORIZERS = (STANDARD_AUTHORIZER, LEGACY_AUTHORIZER)

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


# Kafka's Errors default messages, for the answers that carry one (FindCoordinator v0-v3)
AUTHORIZATION_MESSAGES = {
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
    ErrorCode.transactional_id_authorization_failed: "Transactional Id authorization failed.",
}


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


R, O = ResourceType, AclOperation
_IMPLIES_DESCRIBE = frozenset((O.DESCRIBE, O.READ, O.WRITE, O.DELETE, O.ALTER))
_IMPLIES_DESCRIBE_CONFIGS = frozenset((O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS))

# Kafka's AclEntry.supportedOperations, for the authorized-operations bit sets of Metadata,
# DescribeGroups and DescribeCluster
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    R.TOPIC: (O.READ, O.WRITE, O.CREATE, O.DESCRIBE, O.DELETE, O.ALTER, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS),
    R.GROUP: (O.READ, O.DESCRIBE, O.DELETE, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS),
    R.CLUSTER: (O.CREATE, O.CLUSTER_ACTION, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS, O.IDEMPOTENT_WRITE, O.ALTER,
                O.DESCRIBE),
    R.TRANSACTIONAL_ID: (O.DESCRIBE, O.WRITE),
    R.DELEGATION_TOKEN: (O.DESCRIBE,),
    R.USER: (O.CREATE_TOKENS, O.DESCRIBE_TOKENS),
}


@dataclass(frozen=True, order=True)
class Acl:
    """One ACL binding, with the wire's codes."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def applies_to(self, name: str) -> bool:
        """Does this ACL's pattern cover the resource called `name`?"""
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name == name or self.resource_name == WILDCARD
        return name.startswith(self.resource_name)


@dataclass(frozen=True)
class AclFilter:
    """Kafka's AclBindingFilter: None matches any name, principal or host; ANY any code;
    pattern type MATCH every pattern that covers the named resource."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    def matches(self, acl: Acl) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        pt = self.pattern_type
        if pt not in (PatternType.ANY, PatternType.MATCH) and pt != acl.pattern_type:
            return False
        if self.resource_name is not None:
            if pt == PatternType.MATCH and acl.pattern_type != PatternType.MATCH:
                if not acl.applies_to(self.resource_name):
                    return False
            elif self.resource_name != acl.resource_name:
                return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        if self.permission_type != AclPermissionType.ANY and self.permission_type != acl.permission_type:
            return False
        return True


def validate_new_acl(acl: Acl) -> str | None:
    """Why Kafka refuses to create this ACL (INVALID_REQUEST), or None. Kafka checks in this
    order (AclApis, then the controller's AclControlManager.validateNewAcl)."""
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.resource_name:
        return "Invalid empty resource name"
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY) or acl.resource_type not in ResourceType.__members__.values():
        return f"Invalid resourceType {_name(ResourceType, acl.resource_type)}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {_name(PatternType, acl.pattern_type)}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY) or acl.operation not in AclOperation.__members__.values():
        return f"Invalid operation {_name(AclOperation, acl.operation)}"
    if acl.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        return f"Invalid permissionType {_name(AclPermissionType, acl.permission_type)}"
    if ":" not in acl.principal:
        return f"Could not parse principal from `{acl.principal}` (no colon is present separating the principal type from the principal name)"
    return None


def _name(enum_type, code: int) -> str:
    try:
        return enum_type(code).name
    except ValueError:
        return "UNKNOWN"


def peer_host(peer: str) -> str:
    """The address part of a connection's "host:port" peer string."""
    host = peer.rsplit(":", 1)[0]
    return host.strip("[]")


class Authorizer:
    """The ACLs of the cluster and the decision rule; see the module docstring."""

    def __init__(self, path: Path, super_users: Iterable[str], allow_if_no_acl: bool):
        self.path = path
        self.super_users = frozenset(u.strip() for u in super_users if u.strip())
        self.allow_if_no_acl = allow_if_no_acl
        self._acls: set[Acl] = set()
        # resource type -> the ACLs on resources of that type (authorized_for_any), and the same
        # split for the request path: literal ones by name, the literal wildcards, the prefixed
        self._by_type: dict[int, tuple[Acl, ...]] = {}
        self._literal: dict[int, dict[str, tuple[Acl, ...]]] = {}
        self._wildcard: dict[int, tuple[Acl, ...]] = {}
        self._prefixed: dict[int, dict[str, tuple[Acl, ...]]] = {}

    # --- persistence -------------------------------------------------------------------------
    def load(self) -> None:
        if not self.path.exists():
            return
        data = json.loads(self.path.read_text())
        self._acls = {Acl(*entry) for entry in data["acls"]}
        self._reindex()
        log.info("loaded %d ACL(s)", len(self._acls))

    def _save(self, acls: set[Acl]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"acls": [list(astuple(a)) for a in sorted(acls)]}
        write_atomic(self.path, json.dumps(data, indent=1).encode(), fsync=True)

    def _reindex(self) -> None:
        by_type: dict[int, list[Acl]] = {}
        literal: dict[int, dict[str, list[Acl]]] = {}
        wildcard: dict[int, list[Acl]] = {}
        prefixed: dict[int, dict[str, list[Acl]]] = {}
        for acl in sorted(self._acls):
            rt = acl.resource_type
            by_type.setdefault(rt, []).append(acl)
            if acl.pattern_type == PatternType.PREFIXED:
                prefixed.setdefault(rt, {}).setdefault(acl.resource_name, []).append(acl)
            elif acl.resource_name == WILDCARD:
                wildcard.setdefault(rt, []).append(acl)
            else:
                literal.setdefault(rt, {}).setdefault(acl.resource_name, []).append(acl)
        self._by_type = {k: tuple(v) for k, v in by_type.items()}
        self._literal = {k: {n: tuple(a) for n, a in v.items()} for k, v in literal.items()}
        self._wildcard = {k: tuple(v) for k, v in wildcard.items()}
        self._prefixed = {k: {n: tuple(a) for n, a in v.items()} for k, v in prefixed.items()}

    def _applying(self, rtype: int, name: str) -> list[Acl]:
        """The ACLs whose pattern covers the resource."""
        found = list(self._literal.get(rtype, {}).get(name, ()))
        found.extend(self._wildcard.get(rtype, ()))
        prefixed = self._prefixed.get(rtype)
        if prefixed:
            # one lookup per prefix of the name, however many prefixed ACLs there are
            for end in range(1, len(name) + 1):
                found.extend(prefixed.get(name[:end], ()))
        return found

    # --- the ACL APIs -------------------------------------------------------------------------
    def acls(self, flt: AclFilter) -> list[Acl]:
        return sorted(a for a in self._acls if flt.matches(a))

    def create(self, acls: list[Acl]) -> None:
        """Adds the (validated) ACLs; one that exists already is no change."""
        new = [a for a in acls if a not in self._acls]
        if new:
            self._replace(self._acls | set(new))

    def delete(self, filters: list[AclFilter]) -> list[list[Acl]]:
        """Removes every ACL some filter matches; per filter, the ACLs it matched."""
        matched = [self.acls(f) for f in filters]
        gone = {a for group in matched for a in group}
        if gone:
            self._replace(self._acls - gone)
        return matched

    def _replace(self, acls: set[Acl]) -> None:
        """All or nothing: the ACLs as they will be are saved first; a save that fails (a full
        disk) raises OSError with the ACLs in memory as they were."""
        self._save(acls)
        self._acls = acls
        self._reindex()

    # --- decisions ----------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, op: int, rtype: int, name: str) -> bool:
        if principal in self.super_users:
            return True
        applying = self._applying(rtype, name)
        if not applying:
            return self.allow_if_no_acl
        allowed = False
        for acl in applying:
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != WILDCARD and acl.host != host:
                continue
            if acl.operation != AclOperation.ALL:
                if acl.permission_type == AclPermissionType.ALLOW:
                    if op == AclOperation.DESCRIBE:
                        if acl.operation not in _IMPLIES_DESCRIBE:
                            continue
                    elif op == AclOperation.DESCRIBE_CONFIGS:
                        if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                            continue
                    elif acl.operation != op:
                        continue
                elif acl.operation != op:
                    continue
            if acl.permission_type == AclPermissionType.DENY:
                return False
            allowed = True
        return allowed

    def authorized_for_any(self, principal: str, host: str, op: int, rtype: int) -> bool:
        """Kafka's Authorizer.authorizeByResourceType."""
        if self.authorize(principal, host, op, rtype, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allows: list[Acl] = []
        for acl in self._by_type.get(rtype, ()):
            if acl.host != host and acl.host != WILDCARD:
                continue
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.operation != op and acl.operation != AclOperation.ALL:
                continue
            if acl.permission_type == AclPermissionType.DENY:
                if acl.pattern_type == PatternType.LITERAL:
                    if acl.resource_name == WILDCARD:
                        return False
                    deny_literal.add(acl.resource_name)
                else:
                    deny_prefixed.add(acl.resource_name)
            elif acl.permission_type == AclPermissionType.ALLOW:
                allows.append(acl)
        if any(a.pattern_type == PatternType.LITERAL and a.resource_name == WILDCARD for a in allows):
            return True
        for a in allows:
            name = a.resource_name
            if a.pattern_type == PatternType.LITERAL and name in deny_literal:
                continue
            if not any(name[:i] in deny_prefixed for i in range(1, len(name) + 1)):
                return True
        return False

    def authorized_operations(self, principal: str, host: str, rtype: int, name: str) -> int:
        """The bit set of the supported operations the principal may perform on the resource."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[ResourceType(rtype)]:
            if self.authorize(principal, host, op, rtype, name):
                bits |= 1 << op
        return bits


def from_config(config, data_dir: Path) -> Authorizer | None:
    """The broker's authorizer as its settings ask for, or None when none is configured."""
    name = (config["authorizer.class.name"] or "").strip()
    if not name:
        return None
    if name not in ACCEPTED_AUTHORIZERS:
        raise ValueError(f"authorizer.class.name={name!r}: kafkalite serves {STANDARD_AUTHORIZER} only")
    auth = Authorizer(Path(data_dir) / "__cluster_metadata" / "acls.json",
                      config["super.users"].split(";"), config["allow.everyone.if.no.acl.found"])
    auth.load()
    return auth


# --- the request path -------------------------------------------------------------------------
# Handlers ask through these; with no authorizer configured each costs one attribute test.

class _AuthorizingBroker(Protocol):
    @property
    def authorizer(self) -> Authorizer | None: ...


class AuthContext(Protocol):
    """What the checks below read of a request: broker.context.RequestContext is one (a Protocol,
    so this module need not import the context, which imports the state, which imports this)."""

    @property
    def broker(self) -> _AuthorizingBroker: ...

    @property
    def principal(self) -> str: ...

    @property
    def peer(self) -> str: ...


def allowed(ctx: AuthContext, op: int, rtype: int, name: str) -> bool:
    auth = ctx.broker.authorizer
    return auth is None or auth.authorize(ctx.principal, peer_host(ctx.peer), op, rtype, name)


def allowed_cluster(ctx: AuthContext, op: int) -> bool:
    return allowed(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME)


def allowed_names(ctx: AuthContext, op: int, rtype: int, names: Iterable[str]) -> set[str] | None:
    """The names among `names` the principal may `op`; None (meaning all) with no authorizer."""
    auth = ctx.broker.authorizer
    if auth is None:
        return None
    host = peer_host(ctx.peer)
    return {n for n in set(names) if auth.authorize(ctx.principal, host, op, rtype, n)}


def allowed_any(ctx: AuthContext, op: int, rtype: int) -> bool:
    auth = ctx.broker.authorizer
    return auth is None or auth.authorized_for_any(ctx.principal, peer_host(ctx.peer), op, rtype)


def operations(ctx: AuthContext, rtype: int, name: str, everything: int) -> int:
    """Authorized-operations bits: `everything` (the set a handler reports) with no authorizer."""
    auth = ctx.broker.authorizer
    if auth is None:
        return everything
    return auth.authorized_operations(ctx.principal, peer_host(ctx.peer), rtype, name)
