"""ShareGroupDescribe (API 77): share groups as `ShareGroup.asDescribedGroup` shows them.
A missing group or one of another type answers GROUP_ID_NOT_FOUND; "" INVALID_GROUP_ID.
v1 from the generated codec, v0 (Kafka 3.9) from `share_v0_codec`."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis import share_support
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_describe import describe_groups
from groupcoord.apis.group_support import groups_with_error
from groupcoord.apis.share_v0_codec import as_version, with_v0
from groupcoord.wire.generated.share_group_describe import (
    DescribedGroup,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = share_support.SHARE_MIN_VERSION, 1
REQUEST = with_v0(ShareGroupDescribeRequest)
RESPONSE = with_v0(ShareGroupDescribeResponse)


def error_response(request: Any, version: int, code: int) -> ShareGroupDescribeResponse:
    return as_version(ShareGroupDescribeResponse(
        groups=groups_with_error(DescribedGroup, request.group_ids, code)), version)


async def handle(ctx: RequestContext, header: RequestHeader, request: ShareGroupDescribeRequest,
                 version: int) -> ShareGroupDescribeResponse:
    groups = await describe_groups(
        ctx, request, DescribedGroup,
        lambda shard, group_id: shard.share_group_describe(group_id))
    authz.hide_undescribable_topics(ctx, groups, lambda m: (m.assignment,))
    return as_version(ShareGroupDescribeResponse(groups=groups), version)
