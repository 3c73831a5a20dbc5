"""LeaveGroup (API 13, v0-5): one member (v0-2) or a batch by member / instance id (v3+)."""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_support import call_group
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.wire.generated.leave_group import LeaveGroupRequest, LeaveGroupResponse
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 5


async def handle(ctx: RequestContext, header: RequestHeader, request: LeaveGroupRequest,
                 version: int) -> LeaveGroupResponse:
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    # The shard answers with the API's response (`GroupCoordinatorShard.leave_group`).
    response: LeaveGroupResponse = await call_group(
        ctx, request.group_id, GroupCoordinatorShard.leave_group, request, version)
    return response
