"""CreateAcls (API 30, v1-3): `AclApis.handleCreateAcls` (ALTER on the cluster; every
creation gets its own result)."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.acl_support import NO_AUTHORIZER, binding, has_unknown, not_constructible
from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.create_acls import (
    AclCreationResult,
    CreateAclsRequest,
    CreateAclsResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 1, 3


def error_response(request: Any, version: int, code: int,
                   message: str | None = None) -> CreateAclsResponse:
    return CreateAclsResponse(results=[AclCreationResult(error_code=code, error_message=message)
                                       for _ in request.creations])


async def handle(ctx: RequestContext, header: RequestHeader, request: CreateAclsRequest,
                 version: int) -> CreateAclsResponse | None:
    if any(has_unknown(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type)
           for c in request.creations):
        ctx.close_connection()
        return None
    authz.require_cluster(ctx, authz.Op.ALTER)
    if ctx.authorizer is None:
        return error_response(request, version, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    if any(not_constructible(c) for c in request.creations):
        return error_response(request, version, ErrorCode.UNKNOWN_SERVER_ERROR)
    results = ctx.authorizer.create_acls([binding(c) for c in request.creations])
    # A success carries Kafka's default message, "" (not null).
    return CreateAclsResponse(results=[
        AclCreationResult(error_code=r.error_code,
                          error_message=r.error_message if r.error_code else "")
        for r in results])
