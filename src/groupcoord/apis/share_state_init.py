"""The share-state initialization that follows a ShareGroupHeartbeat
(`GroupCoordinatorService.shareGroupHeartbeat` -> `persisterInitialize` ->
`initializeShareGroupState`, or `uninitializeShareGroupState` on failure).

As in Kafka 4.4, the heartbeat is answered first: its operation wrote the partitions as
initializing (record 15) and returned an `InitializeRequest`, which `start_after_heartbeat`
runs as a task of its own (`Shares.run_after_reply`; Kafka adds it to a timer with delay
0). The task writes the share state (`__share_group_state`, the persister's part), then
record 15 with the partitions initialized; on failure it drops them from initializing, so a later heartbeat retries. The
partitions are assigned by the first heartbeat after that (the group epoch is bumped by
`initializedAssignmentPending`), never before their state exists.
"""

from __future__ import annotations

import logging
from typing import Any

from groupcoord.apis.context import RequestContext
from groupcoord.coordinator.share import state_ops
from groupcoord.coordinator.share.state_metadata import InitializeRequest, TopicInits

log = logging.getLogger("groupcoord.share")

def start_after_heartbeat(ctx: RequestContext, request: InitializeRequest) -> None:
    """Run `request` on its own, not holding up the heartbeat that made it."""
    ctx.shares.run_after_reply(_initialize_logged(ctx, request))


async def _initialize_logged(ctx: RequestContext, request: InitializeRequest) -> None:
    try:
        await initialize(ctx, request)
    except Exception:  # a background task: log it, as Kafka's whenComplete does
        log.exception("Persister initialization failed for share group %s", request.group_id)


async def initialize(ctx: RequestContext, request: InitializeRequest) -> None:
    """`persisterInitialize`: write the share state, then mark it initialized; on failure,
    drop it from initializing so that a later heartbeat retries."""
    group_id = request.group_id
    try:
        await ctx.shares.initialize_state(group_id, dict(request.topics),
                                          request.group_epoch, request.start_offsets)
    except Exception:  # any persister failure uninitializes, as in Kafka
        log.exception("Unable to initialize share group state %s", group_id)
        failed = request.partitions()

        def undo(shard: Any, op_ctx: Any, now_ms: int) -> Any:
            return state_ops.uninitialize(shard, group_id, failed)
        await ctx.groups.call(group_id, undo)
        return
    await mark_initialized(ctx, group_id, request.topics)


async def mark_initialized(ctx: RequestContext, group_id: str, change: TopicInits) -> None:
    def done(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return state_ops.complete_initialize(shard, group_id, change)
    if change:
        await ctx.groups.call(group_id, done)
