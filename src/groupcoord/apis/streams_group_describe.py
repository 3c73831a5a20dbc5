"""StreamsGroupDescribe (API 89, v0-1): streams groups as `StreamsGroup.asDescribedGroup`
shows them. A missing group or one of another type answers GROUP_ID_NOT_FOUND; ""
answers INVALID_GROUP_ID. Topology descriptions (KIP-1331's plugin) are not kept: asked
for one, a described group says NOT_STORED, as Kafka without a plugin does."""

from __future__ import annotations

from typing import Any

from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_describe import describe_groups
from groupcoord.apis.group_support import groups_with_error
from groupcoord.wire.generated.streams_group_describe import (
    DescribedGroup,
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
)
from groupcoord.wire.headers import RequestHeader

# `StreamsGroupTopologyDescriptionManager.attachTopologyDescriptions` without a plugin.
TOPOLOGY_DESCRIPTION_STATUS_NOT_STORED = 1
MIN_VERSION, MAX_VERSION = 0, 1
REQUEST = StreamsGroupDescribeRequest
RESPONSE = StreamsGroupDescribeResponse


def error_response(request: Any, version: int, code: int) -> StreamsGroupDescribeResponse:
    return StreamsGroupDescribeResponse(
        groups=groups_with_error(DescribedGroup, request.group_ids, code))


async def handle(ctx: RequestContext, header: RequestHeader, request: StreamsGroupDescribeRequest,
                 version: int) -> StreamsGroupDescribeResponse:
    groups = await describe_groups(
        ctx, request, DescribedGroup,
        lambda shard, group_id: shard.streams_group_describe(group_id))
    if request.include_topology_description:
        for group in groups:
            if group.error_code == 0:
                group.topology_description_status = TOPOLOGY_DESCRIPTION_STATUS_NOT_STORED
    return StreamsGroupDescribeResponse(groups=groups)
