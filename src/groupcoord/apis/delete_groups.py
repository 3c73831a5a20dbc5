"""DeleteGroups (API 42, v0-3): per shard, empty groups are deleted with tombstones for
their offsets and metadata (and, for share groups, their delivery state); others answer
NON_EMPTY_GROUP or GROUP_ID_NOT_FOUND.

v3 adds a per-group ErrorMessage. Kafka 4.4 leaves it null on every result of the coordinator
path (`GroupCoordinatorShard.deleteGroups`, `DeleteGroupsRequest.getErrorResultCollection`);
it fills it, with GROUP_DELETION_FAILED (134), only when a streams group's topology
description plugin fails to delete (KIP-1331, `GroupCoordinatorService.
filterStreamsTopologyErrors`). groupcoord serves no streams groups, so its messages stay null
and 134 never arises (Kafka's v0-2 downgrade of 134 to UNKNOWN_SERVER_ERROR has nothing to
act on).
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.apis.group_support import by_partition, groups_with_error
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 3


def error_response(request: Any, version: int, code: int) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(results=groups_with_error(
        DeletableGroupResult, dict.fromkeys(request.groups_names), code))


def _delete_op(group_ids: list[str]) -> Any:
    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return shard.delete_groups(group_ids, now_ms)
    return run


async def handle(ctx: RequestContext, header: RequestHeader, request: DeleteGroupsRequest,
                 version: int) -> DeleteGroupsResponse:
    names = list(dict.fromkeys(request.groups_names))
    deletable = authz.authorized(ctx, authz.Op.DELETE, authz.GROUP, names)
    denied = [g for g in names if g not in deletable]
    names = [g for g in names if g in deletable]
    results: dict[str, DeletableGroupResult] = {}
    # Kafka answers INVALID_GROUP_ID only for a null id (the field is not nullable, so the
    # codec never yields one) and keeps "" deletable for backward compatibility
    # (`GroupCoordinatorService.deleteGroups`): it is looked up like any other id.
    for partition, group_ids in by_partition(ctx, names).items():
        try:
            for r in await ctx.groups.call_shard(partition, _delete_op(group_ids)):
                results[r.group_id] = r
        except ApiError as exc:
            for g in group_ids:
                results[g] = DeletableGroupResult(group_id=g, error_code=exc.code)
    for r in results.values():
        if r.error_code == 0:
            # A deleted share group's delivery state lives beside the group, in
            # __share_group_state; it goes too (a no-op for other group kinds).
            await ctx.shares.delete_group_state(r.group_id)
    return DeleteGroupsResponse(results=[results[g] for g in names] + [
        DeletableGroupResult(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
        for g in denied])
