"""ConsumerGroupDescribe (API 69, v0-1) for a broker whose groups are classic: every
group answers GROUP_ID_NOT_FOUND (as Kafka does for a classic or missing group), which
makes the Java admin client fall back to DescribeGroups."""

from __future__ import annotations

from typing import Any

from groupcoord.apis.common import GROUP_OPERATIONS, UNKNOWN_OPERATIONS
from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.result import Result
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.consumer_group_describe import (
    ConsumerGroupDescribeResponse,
    DescribedGroup,
)

API_KEY = 69
MIN_VERSION = 0
MAX_VERSION = 1


def error_response(request: Any, version: int, code: int) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(groups=[DescribedGroup(group_id=g, error_code=code)
                                                 for g in request.group_ids])


def _exists_op(group_id: str) -> Any:
    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return Result(response=shard.classic.get(group_id) is not None)
    return run


async def _describe(ctx: Any, group_id: str) -> DescribedGroup:
    if not group_id:
        return DescribedGroup(group_id=group_id, error_code=ErrorCode.INVALID_GROUP_ID)
    try:
        exists = await ctx.groups.call(group_id, _exists_op(group_id))
    except ApiError as exc:
        return DescribedGroup(group_id=group_id, error_code=exc.code)
    message = (f"Group {group_id} is not a consumer group." if exists
               else f"Group {group_id} not found.")
    return DescribedGroup(group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                          error_message=message)


async def handle(ctx: Any, header: Any, request: Any, version: int) -> Any:
    groups = []
    for group_id in request.group_ids:
        described = await _describe(ctx, group_id)
        described.authorized_operations = (GROUP_OPERATIONS if request.include_authorized_operations
                                           else UNKNOWN_OPERATIONS)
        groups.append(described)
    return ConsumerGroupDescribeResponse(groups=groups)
