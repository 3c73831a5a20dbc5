"""ListGroups (API 16, v0-5): every shard's groups, with the v4 state and v5 type
filters (`GroupMetadataManager.listGroups`)."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 5


def _list_op(states: list[str], types: list[str]) -> Any:
    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return shard.list_groups(states, types)
    return run


async def handle(ctx: RequestContext, header: RequestHeader, request: ListGroupsRequest,
                 version: int) -> ListGroupsResponse:
    states = list(request.states_filter) if version >= 4 else []
    types = list(request.types_filter) if version >= 5 else []
    groups = []
    error = 0
    for partition in range(ctx.groups.num_partitions):
        try:
            groups.extend(await ctx.groups.call_shard(partition, _list_op(states, types)))
        except ApiError as exc:
            # Kafka skips partitions it does not coordinate; any other failure (a loading
            # shard: COORDINATOR_LOAD_IN_PROGRESS) is reported.
            if exc.code != ErrorCode.NOT_COORDINATOR:
                error = error or exc.code
    if not authz.allowed_on_cluster(ctx, authz.Op.DESCRIBE, log_if_denied=False):
        visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.GROUP, (g.group_id for g in groups))
        groups = [g for g in groups if g.group_id in visible]
    return ListGroupsResponse(error_code=error, groups=groups)
