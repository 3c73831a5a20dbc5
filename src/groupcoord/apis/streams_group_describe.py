"""StreamsGroupDescribe (API 89, v0-1): streams groups as `StreamsGroup.asDescribedGroup`
shows them. A missing group or one of another type answers GROUP_ID_NOT_FOUND; ""
answers INVALID_GROUP_ID. Topology descriptions (KIP-1331's plugin) are not kept: asked
for one, a described group says NOT_STORED, as Kafka without a plugin does."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.errors import ApiError
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.streams_group_describe import (
    DescribedGroup,
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
)

API_KEY = 89
# `StreamsGroupTopologyDescriptionManager.attachTopologyDescriptions` without a plugin.
TOPOLOGY_DESCRIPTION_STATUS_NOT_STORED = 1
MIN_VERSION = 0
MAX_VERSION = 1
REQUEST = StreamsGroupDescribeRequest
RESPONSE = StreamsGroupDescribeResponse


def error_response(request: Any, version: int, code: int) -> StreamsGroupDescribeResponse:
    return StreamsGroupDescribeResponse(groups=[DescribedGroup(group_id=g, error_code=code)
                                                for g in request.group_ids])


async def _describe(ctx: Any, group_id: str) -> DescribedGroup:
    if not group_id:
        return DescribedGroup(group_id=group_id, error_code=ErrorCode.INVALID_GROUP_ID)

    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return shard.streams_group_describe(group_id)
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
        if request.include_topology_description and described.error_code == 0:
            described.topology_description_status = TOPOLOGY_DESCRIPTION_STATUS_NOT_STORED
        groups.append(described)
    return StreamsGroupDescribeResponse(groups=groups)
