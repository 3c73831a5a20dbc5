"""The describe path the KIP-848 group kinds share (ConsumerGroupDescribe,
ShareGroupDescribe, StreamsGroupDescribe), as Kafka's `GroupCoordinatorService` runs it:
GROUP_AUTHORIZATION_FAILED first for the groups the principal may not describe, then each
other group in request order: INVALID_GROUP_ID for "", else the shard's description (or
the error it raised), with the authorized operations when asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.wire.errors import ErrorCode

# (shard, group id) -> the generated DescribedGroup of the kind.
ReadGroup = Callable[[Any, str], Any]


class DescribeRequest(Protocol):
    """What the three describe requests have in common."""

    group_ids: list[str]
    include_authorized_operations: bool


async def describe_groups(ctx: RequestContext, request: DescribeRequest, described: type,
                          read: ReadGroup) -> list[Any]:
    group_ids = request.group_ids
    visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.GROUP, group_ids)
    groups = [described(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
              for g in group_ids if g not in visible]
    for group_id in group_ids:
        if group_id not in visible:
            continue
        group = await _describe(ctx, group_id, described, read)
        if request.include_authorized_operations and group.error_code == 0:
            group.authorized_operations = authz.operations(ctx, authz.GROUP, group_id)
        groups.append(group)
    return groups


async def _describe(ctx: RequestContext, group_id: str, described: type, read: ReadGroup) -> Any:
    if not group_id:
        return described(group_id=group_id, error_code=ErrorCode.INVALID_GROUP_ID)

    def run(shard: Any, _op_ctx: Any, _now_ms: int) -> Any:
        return read(shard, group_id)
    try:
        return await ctx.groups.call(group_id, run)
    except ApiError as exc:
        return described(group_id=group_id, error_code=exc.code)
