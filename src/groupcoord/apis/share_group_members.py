"""The group checks the share admin APIs make before touching share state
(`GroupCoordinatorService` alter/deleteShareGroupOffsets): a group id of another type is
GROUP_ID_NOT_FOUND; a share group with members is NON_EMPTY_GROUP; no group at all is
allowed (the state may outlive it)."""

from __future__ import annotations

from typing import Any

from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.wire.errors import ErrorCode


async def empty_group_error(ctx: RequestContext, group_id: str) -> int:
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID

    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        from groupcoord.coordinator.result import Result

        if shard.classic.get(group_id) is not None or shard.consumer.get(group_id) is not None:
            return Result(response=ErrorCode.GROUP_ID_NOT_FOUND)
        group = shard.share.get(group_id)
        busy = group is not None and bool(group.members)
        return Result(response=ErrorCode.NON_EMPTY_GROUP if busy else ErrorCode.NONE)
    try:
        return int(await ctx.groups.call(group_id, run))
    except ApiError as exc:
        return exc.code
