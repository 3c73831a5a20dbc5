"""Heartbeat (API 12, v0-4): keeps a classic member's session alive."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_support import call_group
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.wire.generated.heartbeat import HeartbeatRequest
from groupcoord.wire.headers import RequestHeader

API_KEY = 12
MIN_VERSION = 0
MAX_VERSION = 4


async def handle(ctx: RequestContext, header: RequestHeader, request: HeartbeatRequest,
                 version: int) -> Any:
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    return await call_group(ctx, request.group_id, GroupCoordinatorShard.heartbeat, request, version)
