"""ConsumerGroupDescribe (API 69, v0-1): consumer groups as `ConsumerGroup.asDescribedGroup`
shows them. A classic or missing group answers GROUP_ID_NOT_FOUND (which makes the Java
admin client fall back to DescribeGroups); "" answers INVALID_GROUP_ID."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.errors import ApiError
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
)

API_KEY = 69
MIN_VERSION = 0
MAX_VERSION = 1
REQUEST = ConsumerGroupDescribeRequest
RESPONSE = ConsumerGroupDescribeResponse


def error_response(request: Any, version: int, code: int) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(groups=[DescribedGroup(group_id=g, error_code=code)
                                                 for g in request.group_ids])


def _describe_op(group_id: str, version: int) -> Any:
    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return shard.consumer_group_describe(group_id, version)
    return run


async def _describe(ctx: Any, group_id: str, version: int) -> DescribedGroup:
    if not group_id:
        return DescribedGroup(group_id=group_id, error_code=ErrorCode.INVALID_GROUP_ID)
    try:
        described: DescribedGroup = await ctx.groups.call(group_id,
                                                          _describe_op(group_id, version))
    except ApiError as exc:
        return DescribedGroup(group_id=group_id, error_code=exc.code)
    return described


async def handle(ctx: Any, header: Any, request: Any, version: int) -> Any:
    visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.GROUP, request.group_ids)
    groups = [DescribedGroup(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
              for g in request.group_ids if g not in visible]
    for group_id in request.group_ids:
        if group_id not in visible:
            continue
        described = await _describe(ctx, group_id, version)
        if request.include_authorized_operations and described.error_code == 0:
            described.authorized_operations = authz.operations(ctx, authz.GROUP, group_id)
        groups.append(described)
    authz.hide_undescribable_topics(ctx, groups, lambda m: (m.assignment, m.target_assignment))
    return ConsumerGroupDescribeResponse(groups=groups)
