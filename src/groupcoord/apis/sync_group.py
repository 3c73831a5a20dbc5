"""SyncGroup (API 14, v0-5): the leader hands out assignments, followers wait for them
(`KafkaApis.handleSyncGroupRequest`; v5 requires ProtocolType and ProtocolName)."""

from __future__ import annotations

from typing import Any

from groupcoord.apis.group_support import call_group

API_KEY = 14
MIN_VERSION = 0
MAX_VERSION = 5


async def handle(ctx: Any, header: Any, request: Any, version: int) -> Any:
    return await call_group(ctx, request.group_id, "sync_group", request, version)
