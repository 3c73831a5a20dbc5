"""JoinGroup (API 11, v0-9): the classic group join; the reply may be parked until the
join phase completes (`KafkaApis.handleJoinGroupRequest`)."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.group_support import call_group

API_KEY = 11
MIN_VERSION = 0
MAX_VERSION = 9


async def handle(ctx: Any, header: Any, request: Any, version: int) -> Any:
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    return await call_group(ctx, request.group_id, "join_group", request, version)
