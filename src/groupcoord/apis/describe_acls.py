"""DescribeAcls (API 29, v1-3): `AclApis.handleDescribeAcls` (DESCRIBE on the cluster),
the matching ACLs grouped by resource pattern (`DescribeAclsResponse.aclsResources`)."""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.acl_support import binding_filter, has_unknown
from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_acls import (
    AclDescription,
    DescribeAclsRequest,
    DescribeAclsResource,
    DescribeAclsResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 1, 3


async def handle(ctx: RequestContext, header: RequestHeader, request: DescribeAclsRequest,
                 version: int) -> DescribeAclsResponse | None:
    r = request
    if has_unknown(r.resource_type_filter, r.pattern_type_filter, r.operation, r.permission_type):
        ctx.close_connection()
        return None
    authz.require_cluster(ctx, authz.Op.DESCRIBE)
    if ctx.authorizer is None:
        return DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED,
                                    error_message="No Authorizer is configured on the broker")
    acl_filter = binding_filter(r, operation=r.operation, permission_type=r.permission_type)
    resources: dict[tuple[int, str, int], list[AclDescription]] = {}
    for acl in ctx.authorizer.acls(acl_filter):
        key = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
        resources.setdefault(key, []).append(AclDescription(
            principal=acl.principal, host=acl.host, operation=int(acl.operation),
            permission_type=int(acl.permission_type)))
    return DescribeAclsResponse(resources=[
        DescribeAclsResource(resource_type=rt, resource_name=name, pattern_type=pt, acls=acls)
        for (rt, name, pt), acls in resources.items()])
