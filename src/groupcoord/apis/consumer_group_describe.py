"""ConsumerGroupDescribe (API 69, v0-1): consumer groups as `ConsumerGroup.asDescribedGroup`
shows them. A classic or missing group answers GROUP_ID_NOT_FOUND (which makes the Java
admin client fall back to DescribeGroups); "" answers INVALID_GROUP_ID."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_describe import describe_groups
from groupcoord.apis.group_support import groups_with_error
from groupcoord.wire.generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 1
REQUEST = ConsumerGroupDescribeRequest
RESPONSE = ConsumerGroupDescribeResponse


def error_response(request: Any, version: int, code: int) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(
        groups=groups_with_error(DescribedGroup, request.group_ids, code))


async def handle(ctx: RequestContext, header: RequestHeader, request: ConsumerGroupDescribeRequest,
                 version: int) -> ConsumerGroupDescribeResponse:
    groups = await describe_groups(
        ctx, request, DescribedGroup,
        lambda shard, group_id: shard.consumer_group_describe(group_id, version))
    authz.hide_undescribable_topics(ctx, groups, lambda m: (m.assignment, m.target_assignment))
    return ConsumerGroupDescribeResponse(groups=groups)
