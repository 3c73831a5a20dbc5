"""The share-state initialization that follows a ShareGroupHeartbeat
(`GroupCoordinatorService.shareGroupHeartbeat` -> `persisterInitialize` ->
`initializeShareGroupState`, or `uninitializeShareGroupState` on failure).

Kafka answers the heartbeat first and initializes asynchronously; the target assignment
then only offers initialized partitions. Here the persister is in-process, so the three
steps (record 15 with the partitions initializing, the `__share_group_state` write, record
15 with them initialized) run before the heartbeat is answered, and every partition a
member is given is already initialized when it sees it.
"""

from __future__ import annotations

import logging
from typing import Any

from groupcoord.apis.context import RequestContext
from groupcoord.coordinator.share import state_ops

log = logging.getLogger("groupcoord.share")


async def initialize_after_heartbeat(ctx: RequestContext, group_id: str) -> None:
    def begin(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return state_ops.begin_initialize(shard, group_id)
    change = await ctx.groups.call(group_id, begin)
    if change:
        await initialize(ctx, group_id, change)


async def initialize(ctx: RequestContext, group_id: str, change: dict[bytes, Any]) -> None:
    """Write the share state of `change` (topic id -> TopicInit), then mark it initialized;
    on failure, drop it from initializing so that the next heartbeat retries."""
    try:
        ctx.shares.initialize_state(group_id, change)
    except Exception:
        log.exception("share-state initialization failed for %s", group_id)
        parts = {t: v.partitions for t, v in change.items()}

        def undo(shard: Any, op_ctx: Any, now_ms: int) -> Any:
            return state_ops.uninitialize(shard, group_id, parts)
        await ctx.groups.call(group_id, undo)
        return

    await mark_initialized(ctx, group_id, change)


async def mark_initialized(ctx: RequestContext, group_id: str, change: dict[bytes, Any]) -> None:
    def done(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return state_ops.complete_initialize(shard, group_id, change)
    if change:
        await ctx.groups.call(group_id, done)
