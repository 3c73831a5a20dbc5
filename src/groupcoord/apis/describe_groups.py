"""DescribeGroups (API 15, v0-6): classic groups, split per shard. Groups the principal may
not describe answer GROUP_AUTHORIZATION_FAILED; authorized operations (v3+, when requested)
are set on groups described without error, else Kafka's "not requested" value;
v6 answers GROUP_ID_NOT_FOUND for unknown groups (KIP-1043)."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.apis.group_support import groups_with_error
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_groups import (
    DescribedGroup,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 6


def error_response(request: Any, version: int, code: int) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=groups_with_error(DescribedGroup, request.groups, code))


def _describe_op(group_id: str, version: int) -> Any:
    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return shard.describe_group(group_id, version)
    return run


async def handle(ctx: RequestContext, header: RequestHeader, request: DescribeGroupsRequest,
                 version: int) -> DescribeGroupsResponse:
    include_ops = version >= 3 and request.include_authorized_operations
    # Groups the principal may not describe come first, as Kafka answers them up front.
    visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.GROUP,
                               (g for g in request.groups if g is not None))
    groups = [DescribedGroup(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
              for g in request.groups if g is not None and g not in visible]
    for group_id in request.groups:
        if group_id is not None and group_id not in visible:
            continue
        if group_id is None:
            described = DescribedGroup(group_id="", error_code=ErrorCode.INVALID_GROUP_ID)
        else:
            try:
                described = await ctx.groups.call(group_id, _describe_op(group_id, version))
            except ApiError as exc:
                described = DescribedGroup(group_id=group_id, error_code=exc.code)
        if include_ops and described.error_code == 0:
            described.authorized_operations = authz.operations(ctx, authz.GROUP, group_id)
        groups.append(described)
    return DescribeGroupsResponse(groups=groups)
