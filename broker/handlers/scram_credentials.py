"""DescribeUserScramCredentials (key 50) v0 and AlterUserScramCredentials (key 51) v0.

SCRAM credentials as Kafka's controller keeps them (broker.credentials; persisted in the data
dir, salted, never a password). Describe with no users lists every user that has one; a named
user without credentials gets RESOURCE_NOT_FOUND, one named twice DUPLICATE_RESOURCE.
Alter takes deletions and upsertions (the client sends the salted password, salt and
iteration count; the broker keeps StoredKey and ServerKey): a user named twice in one request
gets DUPLICATE_RESOURCE, an empty name or an iteration count outside 4096..16384
UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM, deleting a
credential that does not exist RESOURCE_NOT_FOUND; Kafka's messages throughout. The other
users of the request are altered all the same. Authentication uses a new credential from the
next SCRAM exchange. The valid changes are saved together before any is made: a save that fails
(a full disk) answers KAFKA_STORAGE_ERROR for each of those users and changes none.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..credentials import MAX_ITERATIONS, MECHANISM_IDS, MECHANISM_NAMES, MIN_ITERATIONS, ScramCredential
from . import api
from ..all_or_nothing import storage_error_message
from .common import response_module

log = logging.getLogger("kafkalite.admin")

_TWICE = "A user credential cannot be altered twice in the same request"


@api(50, 0, 0)
async def describe_user_scram_credentials(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    store = ctx.broker.scram
    names = [u.name for u in request.users or ()]
    duplicated: dict[str, bool] = {}
    if not names:
        duplicated = {user: False for user in store.users}
    for name in names:
        duplicated[name] = name in duplicated
    results = []
    for user, twice in duplicated.items():
        if twice:
            results.append(make(mod.DescribeUserScramCredentialsResult, user=user,
                                error_code=ErrorCode.duplicate_resource, credential_infos=(),
                                error_message=f"Cannot describe SCRAM credentials for the same user twice in a "
                                              f"single request: {user}"))
            continue
        creds = store.users.get(user, {})
        if not creds:
            results.append(make(mod.DescribeUserScramCredentialsResult, user=user,
                                error_code=ErrorCode.resource_not_found, credential_infos=(),
                                error_message=f"Attempt to describe a user credential that does not exist: {user}"))
            continue
        infos = tuple(make(mod.CredentialInfo, mechanism=MECHANISM_IDS[m], iterations=c.iterations)
                      for m, c in sorted(creds.items()))
        # Kafka leaves the message of a described user at its default, the empty string
        results.append(make(mod.DescribeUserScramCredentialsResult, user=user, error_code=ErrorCode.none,
                            error_message="", credential_infos=infos))
    return make(mod.DescribeUserScramCredentialsResponse, throttle_time=0, error_code=ErrorCode.none,
                error_message="", results=tuple(results))


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in MECHANISM_NAMES:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


@api(51, 0, 0)
async def alter_user_scram_credentials(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    store = ctx.broker.scram
    deletions: dict[str, Any] = {}
    upserts: dict[str, Any] = {}
    errors: dict[str, tuple[ErrorCode, str]] = {}
    # the same passes as Kafka's ScramControlManager.alterCredentials
    for d in request.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = (ErrorCode.duplicate_resource, _TWICE)
            continue
        err = _check_name_and_mechanism(d.name, int(d.mechanism))
        if err is None and store.get(d.name, MECHANISM_NAMES[int(d.mechanism)]) is None:
            err = (ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
        if err is not None:
            errors[d.name] = err
        else:
            deletions[d.name] = d
    for u in request.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upserts.pop(u.name, None) is not None:
            errors[u.name] = (ErrorCode.duplicate_resource, _TWICE)
            continue
        err = _check_name_and_mechanism(u.name, int(u.mechanism))
        if err is None and int(u.iterations) < MIN_ITERATIONS:
            err = (ErrorCode.unacceptable_credential, "Too few iterations")
        elif err is None and int(u.iterations) > MAX_ITERATIONS:
            err = (ErrorCode.unacceptable_credential, "Too many iterations")
        if err is not None:
            errors[u.name] = err
        else:
            upserts[u.name] = u
    code, message = ErrorCode.none, None
    if deletions or upserts:
        try:
            store.alter([(name, MECHANISM_NAMES[int(d.mechanism)]) for name, d in deletions.items()],
                        [(name, MECHANISM_NAMES[int(u.mechanism)], ScramCredential.from_salted_password(
                            MECHANISM_NAMES[int(u.mechanism)], bytes(u.salted_password), bytes(u.salt),
                            int(u.iterations))) for name, u in upserts.items()])
        except OSError as exc:
            log.error("saving SCRAM credentials failed: %s", exc)
            code, message = ErrorCode.kafka_storage_error, storage_error_message(exc)
    results = [make(mod.AlterUserScramCredentialsResult, user=name, error_code=code, error_message=message)
               for name in (*deletions, *upserts)]
    for name, (code, message) in errors.items():
        results.append(make(mod.AlterUserScramCredentialsResult, user=name, error_code=code, error_message=message))
    return make(mod.AlterUserScramCredentialsResponse, throttle_time=0, results=tuple(results))
