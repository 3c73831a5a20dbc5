"""ShareGroupDescribe (API 77): share groups as `ShareGroup.asDescribedGroup` shows them.
A missing group or one of another type answers GROUP_ID_NOT_FOUND; "" INVALID_GROUP_ID.
v1 from the generated codec, v0 (Kafka 3.9) from `share_v0_codec`."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis import share_support
from groupcoord.apis.errors import ApiError
from groupcoord.apis.share_v0_codec import as_version
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.share_group_describe import (
    DescribedGroup,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)

API_KEY = 77
MIN_VERSION = share_support.SHARE_MIN_VERSION
MAX_VERSION = 1
REQUEST = share_support.versioned_request(ShareGroupDescribeRequest)
RESPONSE = share_support.versioned_response(ShareGroupDescribeResponse)


def error_response(request: Any, version: int, code: int) -> ShareGroupDescribeResponse:
    return as_version(ShareGroupDescribeResponse(
        groups=[DescribedGroup(group_id=g, error_code=code) for g in request.group_ids]), version)


async def _describe(ctx: Any, group_id: str) -> DescribedGroup:
    if not group_id:
        return DescribedGroup(group_id=group_id, error_code=ErrorCode.INVALID_GROUP_ID)

    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return shard.share_group_describe(group_id)
    try:
        described: DescribedGroup = await ctx.groups.call(group_id, run)
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
        described = await _describe(ctx, group_id)
        if request.include_authorized_operations and described.error_code == 0:
            described.authorized_operations = authz.operations(ctx, authz.GROUP, group_id)
        groups.append(described)
    authz.hide_undescribable_topics(ctx, groups, lambda m: (m.assignment,))
    return as_version(ShareGroupDescribeResponse(groups=groups), version)
