"""DeleteAcls (API 31, v1-3): `AclApis.handleDeleteAcls` (ALTER on the cluster); each filter
answers the ACLs it removed, all removals of the request applied together."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.acl_support import NO_AUTHORIZER, binding_filter, has_unknown
from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.delete_acls import (
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 1, 3


def error_response(request: Any, version: int, code: int,
                   message: str | None = None) -> DeleteAclsResponse:
    return DeleteAclsResponse(filter_results=[
        DeleteAclsFilterResult(error_code=code, error_message=message) for _ in request.filters])


async def handle(ctx: RequestContext, header: RequestHeader, request: DeleteAclsRequest,
                 version: int) -> DeleteAclsResponse | None:
    if any(has_unknown(f.resource_type_filter, f.pattern_type_filter, f.operation,
                       f.permission_type) for f in request.filters):
        ctx.close_connection()
        return None
    authz.require_cluster(ctx, authz.Op.ALTER)
    if ctx.authorizer is None:
        return error_response(request, version, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    filters = [binding_filter(f, operation=f.operation, permission_type=f.permission_type)
               for f in request.filters]
    results = ctx.authorizer.delete_acls(filters)
    return DeleteAclsResponse(filter_results=[
        DeleteAclsFilterResult(error_code=r.error_code, error_message=r.error_message,
                               matching_acls=[DeleteAclsMatchingAcl(
                                   error_code=0, error_message=None,
                                   resource_type=int(a.resource_type),
                                   resource_name=a.resource_name,
                                   pattern_type=int(a.pattern_type), principal=a.principal,
                                   host=a.host, operation=int(a.operation),
                                   permission_type=int(a.permission_type))
                                   for a in r.matching])
        for r in results])
