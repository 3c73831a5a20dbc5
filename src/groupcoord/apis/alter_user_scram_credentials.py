"""AlterUserScramCredentials (key 51, v0): add, replace and remove SCRAM credentials.

Mirrors Kafka's `ScramControlManager.alterCredentials`. An upsertion carries the salt, the
iterations and the SaltedPassword the client computed (the password never travels); the
broker keeps StoredKey and ServerKey derived from it. Per user:
- a user altered twice in one request (any mix of deletions and upsertions, whatever the
  mechanisms) gets DUPLICATE_RESOURCE, and none of its changes apply;
- an empty name UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM;
- iterations below the mechanism's minimum (4096) or above 16384 UNACCEPTABLE_CREDENTIAL;
- deleting a credential that does not exist RESOURCE_NOT_FOUND.
Results list deletions, then upsertions, then errors, as Kafka builds them. All accepted
changes are made durable together before the response (Kafka's atomic record batch).
(Authorization, ALTER on CLUSTER, is the authorizer's.)
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.security.scram import BY_TYPE, MAX_ITERATIONS, credential_from_salted
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 0

TWICE = "A user credential cannot be altered twice in the same request"

Error = tuple[int, str]


def _name_and_mechanism(name: str, mechanism: int) -> Error | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in BY_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _upsertion_error(upsertion: Any) -> Error | None:
    error = _name_and_mechanism(upsertion.name, upsertion.mechanism)
    if error is not None:
        return error
    if upsertion.iterations < BY_TYPE[upsertion.mechanism].min_iterations:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not upsertion.salted_password:
        return ErrorCode.UNKNOWN_SERVER_ERROR, "Empty key"  # Java's Mac.init refusal
    return None


def error_response(request: AlterUserScramCredentialsRequest, version: int,
                   code: int) -> AlterUserScramCredentialsResponse:
    names = dict.fromkeys([d.name for d in request.deletions]
                          + [u.name for u in request.upsertions])
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=[
        AlterUserScramCredentialsResult(user=name, error_code=code, error_message=None)
        for name in names])


async def handle(ctx: RequestContext, header: RequestHeader, request: AlterUserScramCredentialsRequest,
                 version: int) -> AlterUserScramCredentialsResponse:
    authz.require_cluster(ctx, authz.Op.ALTER)
    store = ctx.scram_credentials
    existing = store.users()
    deletions: dict[str, Any] = {}
    upsertions: dict[str, Any] = {}
    errors: dict[str, Error] = {}
    for deletion in request.deletions:
        name = deletion.name
        if name in errors:
            continue
        if deletions.pop(name, None) is not None:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, TWICE)
            continue
        error = _name_and_mechanism(name, deletion.mechanism)
        if error is None and BY_TYPE[deletion.mechanism].name not in existing.get(name, {}):
            error = (ErrorCode.RESOURCE_NOT_FOUND,
                     "Attempt to delete a user credential that does not exist")
        if error is not None:
            errors[name] = error
        else:
            deletions[name] = deletion
    for upsertion in request.upsertions:
        name = upsertion.name
        if name in errors:
            continue
        if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, TWICE)
            continue
        error = _upsertion_error(upsertion)
        if error is not None:
            errors[name] = error
        else:
            upsertions[name] = upsertion
    changes = []
    for name, upsertion in upsertions.items():
        mechanism = BY_TYPE[upsertion.mechanism]
        changes.append((name, mechanism.name, credential_from_salted(
            mechanism.hash_name, bytes(upsertion.salted_password), bytes(upsertion.salt),
            upsertion.iterations)))
    removals = [(name, BY_TYPE[d.mechanism].name) for name, d in deletions.items()]
    if changes or removals:
        try:
            store.apply(changes, removals)
        except OSError as exc:
            raise ApiError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from exc
    results = [AlterUserScramCredentialsResult(user=name, error_code=0, error_message=None)
               for name in [*deletions, *upsertions]]
    results += [AlterUserScramCredentialsResult(user=name, error_code=code, error_message=message)
                for name, (code, message) in errors.items()]
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)
