"""DescribeUserScramCredentials (key 50, v0): which SCRAM mechanisms each user has, and the
iterations; never salts or keys.

Mirrors Kafka's `ScramImage.describe`: no users (null or empty) means every user with a
credential; a user named twice gets DUPLICATE_RESOURCE, a user without any credential
RESOURCE_NOT_FOUND, each with Kafka's message ending in the user name. Needs DESCRIBE on
the cluster (CLUSTER_AUTHORIZATION_FAILED, at the top and once per requested user).
"""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.security.scram import MECHANISMS
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_user_scram_credentials import (
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 0

DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
USER_NOT_FOUND = "Attempt to describe a user credential that does not exist: "


def error_response(request: DescribeUserScramCredentialsRequest, version: int,
                   code: int) -> DescribeUserScramCredentialsResponse:
    """Kafka's `getErrorResponse`: the error at the top and on one (unnamed) result per user."""
    message = authz.MESSAGES.get(code)
    return DescribeUserScramCredentialsResponse(
        error_code=code, error_message=message,
        results=[DescribeUserScramCredentialsResult(error_code=code, error_message=message)
                 for _ in request.users or []])


async def handle(ctx: RequestContext, header: RequestHeader, request: DescribeUserScramCredentialsRequest,
                 version: int) -> DescribeUserScramCredentialsResponse:
    authz.require_cluster(ctx, authz.Op.DESCRIBE)
    users = ctx.scram_credentials.users()
    duplicated: dict[str, bool] = {}
    if not request.users:
        duplicated = dict.fromkeys(sorted(users), False)
    else:
        for entry in request.users:
            duplicated[entry.name] = entry.name in duplicated
    results = []
    for user, twice in duplicated.items():
        if twice:
            results.append(DescribeUserScramCredentialsResult(
                user=user, error_code=ErrorCode.DUPLICATE_RESOURCE,
                error_message=DUPLICATE_USER + user, credential_infos=[]))
            continue
        credentials = users.get(user)
        if not credentials:
            results.append(DescribeUserScramCredentialsResult(
                user=user, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                error_message=USER_NOT_FOUND + user, credential_infos=[]))
            continue
        infos = [CredentialInfo(mechanism=MECHANISMS[name].type_id, iterations=cred.iterations)
                 for name, cred in sorted(credentials.items(),
                                          key=lambda item: MECHANISMS[item[0]].type_id)]
        results.append(DescribeUserScramCredentialsResult(
            user=user, error_code=0, error_message="", credential_infos=infos))
    # Kafka leaves the nullable messages at their default, "", where there is no error.
    return DescribeUserScramCredentialsResponse(throttle_time_ms=0, error_code=0,
                                                error_message="", results=results)
