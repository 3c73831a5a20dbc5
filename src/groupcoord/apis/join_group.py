"""JoinGroup (API 11, v0-9): the classic group join; the reply may be parked until the
join phase completes (`KafkaApis.handleJoinGroupRequest`)."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_support import call_group
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.wire.generated.join_group import JoinGroupRequest, JoinGroupResponse
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 9


def error_response(request: Any, version: int, code: int) -> JoinGroupResponse:
    """Kafka's `JoinGroupRequest.getErrorResponse`: no generation, member or leader, and a
    null protocol name from v7 ("" before)."""
    return JoinGroupResponse(error_code=code, generation_id=-1, member_id="", leader="",
                             protocol_name=None if version >= 7 else "", members=[])


async def handle(ctx: RequestContext, header: RequestHeader, request: JoinGroupRequest,
                 version: int) -> JoinGroupResponse:
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    return await call_group(ctx, request.group_id, GroupCoordinatorShard.join_group, request, version)
