"""Heartbeat (API 12, v0-4): keeps a classic member's session alive."""

from __future__ import annotations

from collections.abc import Awaitable

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_support import op
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.wire.generated.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 4


def handle(ctx: RequestContext, header: RequestHeader, request: HeartbeatRequest,
           version: int) -> Awaitable[HeartbeatResponse]:
    """Not a coroutine: the shard's future is the answer (no task per heartbeat)."""
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    # The shard answers with the API's response (`GroupCoordinatorShard.heartbeat`).
    response: Awaitable[HeartbeatResponse] = ctx.groups.submit(
        request.group_id, op(GroupCoordinatorShard.heartbeat, request, version))
    return response
