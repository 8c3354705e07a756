"""DescribeAcls (key 29) v1-v3, CreateAcls (30) v1-v3 and DeleteAcls (31) v1-v3 (Kafka 4 serves no v0).

- Without an authorizer (`authorizer.class.name` unset) each answers SECURITY_DISABLED: the
  whole-response error of DescribeAcls, every creation's and every filter's error otherwise,
  as Kafka's AclApis does.
- DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER; refused, the
  answer carries CLUSTER_AUTHORIZATION_FAILED in the same places.
- CreateAcls: a creation with a filter's code (resource type, operation or permission ANY,
  pattern type ANY or MATCH) fails the whole request, every creation UNKNOWN_SERVER_ERROR, as
  Kafka, which cannot build such a binding. Otherwise each creation is validated on its own
  (INVALID_REQUEST with Kafka's message): a CLUSTER resource not named `kafka-cluster`, an
  empty name, an unknown code, a principal without `Type:`; the valid ones are stored.
- A request naming code 0 (UNKNOWN) for a resource type, pattern type, operation or permission
  closes the connection (Kafka cannot read it); a code past the known ones is UNKNOWN, which
  CreateAcls refuses with INVALID_REQUEST.
- DescribeAcls returns the ACLs its filter matches grouped by resource pattern; DeleteAcls
  removes every ACL any of its filters matches and lists, per filter, those it matched.
  Filters follow Kafka's AclBindingFilter (broker.authorizer.AclFilter): pattern type ANY,
  MATCH (every pattern that covers the named resource), LITERAL or PREFIXED.
- CreateAcls and DeleteAcls save the ACLs as they will be before any changes (broker.authorizer):
  a save that fails (a full disk) answers KAFKA_STORAGE_ERROR for each creation that was valid,
  or each filter, and changes nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..all_or_nothing import storage_error_message
from ..context import RequestContext
from ..authorizer import (Acl, AclFilter, AclOperation, AclPermissionType, PatternType, ResourceType, allowed_cluster,
                          validate_new_acl)
from . import api
from .common import CloseConnection, response_module

log = logging.getLogger("kafkalite.admin")

NO_AUTHORIZER = "No Authorizer is configured on the broker"
NO_AUTHORIZER_ALTER = "No Authorizer is configured."  # CreateAcls' and DeleteAcls' text


def _indefinite(c) -> bool:
    """A creation naming a filter's ANY or MATCH, which no ACL can have."""
    return (c.resource_type == ResourceType.ANY or c.resource_pattern_type in (PatternType.ANY, PatternType.MATCH)
            or c.operation == AclOperation.ANY or c.permission_type == AclPermissionType.ANY)


def _check_known(*codes) -> None:
    """A code 0 (UNKNOWN) makes the request unreadable to Kafka, which closes the connection."""
    if 0 in codes:
        raise CloseConnection("an ACL request with an UNKNOWN (0) resource type, pattern type, operation or permission")


def _refused(ctx: RequestContext, operation: AclOperation, no_authorizer: str) -> tuple[ErrorCode, str | None] | None:
    """Why the request is refused: (error code, message) without `operation` on the cluster or
    without an authorizer; None when it runs."""
    if not allowed_cluster(ctx, operation):
        return ErrorCode.cluster_authorization_failed, None
    if ctx.broker.authorizer is None:
        return ErrorCode.security_disabled, no_authorizer
    return None


def _filter(f, resource_type, resource_name, pattern_type) -> AclFilter:
    return AclFilter(int(resource_type), resource_name, int(pattern_type), f.principal_filter, f.host_filter,
                     int(f.operation), int(f.permission_type))


@api(29, 1, 3)
async def describe_acls(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    auth = ctx.broker.authorizer

    def error(code, message):
        return make(mod.DescribeAclsResponse, throttle_time=0, error_code=code, error_message=message, resources=())

    _check_known(request.resource_type_filter, request.pattern_type_filter, request.operation,
                 request.permission_type)
    refused = _refused(ctx, AclOperation.DESCRIBE, NO_AUTHORIZER)
    if refused is not None:
        return error(*refused)
    assert auth is not None  # _refused answered a broker without an authorizer
    flt = _filter(request, request.resource_type_filter, request.resource_name_filter, request.pattern_type_filter)
    groups: dict[tuple[int, str, int], list[Acl]] = {}
    for acl in auth.acls(flt):
        groups.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl)
    resources = tuple(
        make(mod.DescribeAclsResource, resource_type=rt, resource_name=name, pattern_type=pt,
             acls=tuple(make(mod.AclDescription, principal=a.principal, host=a.host, operation=a.operation,
                             permission_type=a.permission_type) for a in acls))
        for (rt, name, pt), acls in groups.items())
    # Kafka leaves the field at its default, "" (AclApis sets no message on success)
    return make(mod.DescribeAclsResponse, throttle_time=0, error_code=ErrorCode.none, error_message="",
                resources=resources)


@api(30, 1, 3)
async def create_acls(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    auth = ctx.broker.authorizer

    def result(code=ErrorCode.none, message=""):
        return make(mod.AclCreationResult, error_code=code, error_message=message)

    for c in request.creations:
        _check_known(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type)
    refused = _refused(ctx, AclOperation.ALTER, NO_AUTHORIZER_ALTER)
    if refused is not None:
        return make(mod.CreateAclsResponse, throttle_time=0, results=tuple(result(*refused) for _ in request.creations))
    if any(_indefinite(c) for c in request.creations):
        # Kafka cannot even build such a binding: the whole request fails, every creation with
        # the generic server error and no message (ApiError.fromThrowable of its exception)
        return make(mod.CreateAclsResponse, throttle_time=0, results=tuple(
            result(ErrorCode.unknown_server_error, None) for _ in request.creations))
    results = []
    valid = []
    for c in request.creations:
        acl = Acl(int(c.resource_type), c.resource_name, int(c.resource_pattern_type), c.principal, c.host,
                  int(c.operation), int(c.permission_type))
        why = validate_new_acl(acl)
        if why is None:
            valid.append(acl)
            results.append(result())
        else:
            results.append(result(ErrorCode.invalid_request, why))
    assert auth is not None
    try:
        auth.create(valid)
    except OSError as exc:
        log.error("saving ACLs failed: %s", exc)
        failed = result(ErrorCode.kafka_storage_error, storage_error_message(exc))
        results = [failed if r.error_code == ErrorCode.none else r for r in results]
    return make(mod.CreateAclsResponse, throttle_time=0, results=tuple(results))


@api(31, 1, 3)
async def delete_acls(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    auth = ctx.broker.authorizer

    def failed(code, message):
        return make(mod.DeleteAclsFilterResult, error_code=code, error_message=message, matching_acls=())

    for f in request.filters:
        _check_known(f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type)
    refused = _refused(ctx, AclOperation.ALTER, NO_AUTHORIZER_ALTER)
    if refused is not None:
        return make(mod.DeleteAclsResponse, throttle_time=0, filter_results=tuple(failed(*refused) for _ in request.filters))
    assert auth is not None
    filters = [_filter(f, f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter) for f in request.filters]
    try:
        matched = auth.delete(filters)
    except OSError as exc:
        log.error("saving ACLs failed: %s", exc)
        message = storage_error_message(exc)
        return make(mod.DeleteAclsResponse, throttle_time=0, filter_results=tuple(
            failed(ErrorCode.kafka_storage_error, message) for _ in request.filters))
    results = tuple(
        make(mod.DeleteAclsFilterResult, error_code=ErrorCode.none, error_message=None,
             matching_acls=tuple(
                 make(mod.DeleteAclsMatchingAcl, error_code=ErrorCode.none, error_message=None,
                      resource_type=a.resource_type, resource_name=a.resource_name, pattern_type=a.pattern_type,
                      principal=a.principal, host=a.host, operation=a.operation, permission_type=a.permission_type)
                 for a in acls))
        for acls in matched)
    return make(mod.DeleteAclsResponse, throttle_time=0, filter_results=results)
