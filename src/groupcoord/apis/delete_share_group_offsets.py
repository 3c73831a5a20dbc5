"""DeleteShareGroupOffsets (API 92, v0): delete the share state of whole topics for a
group (`GroupCoordinatorService.deleteShareGroupOffsets`); the next heartbeat
re-initializes them and the next fetch starts by `share.auto.offset.reset`.

As in Kafka: the group must be an existing share group (GROUP_ID_NOT_FOUND) with no
members (NON_EMPTY_GROUP); a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION, and
so is one the group has no initialized share-partitions of ("There is no offset
information to delete."). Eligible topics move from initialized to deleting in
ShareGroupStatePartitionMetadata, their `__share_group_state` entries are tombstoned, and
a second record drops them from deleting (`completeDeleteShareGroupOffsets`).
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.share import state_ops
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseTopic,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 0
REQUEST = DeleteShareGroupOffsetsRequest
RESPONSE = DeleteShareGroupOffsetsResponse

NO_OFFSETS = "There is no offset information to delete."
UNKNOWN_TOPIC = "This server does not host this topic-partition."
Topic = DeleteShareGroupOffsetsResponseTopic


def error_response(request: Any, version: int, code: int) -> DeleteShareGroupOffsetsResponse:
    """Kafka's `getErrorResponse`: the error with its message, no topics."""
    return DeleteShareGroupOffsetsResponse(error_code=code,
                                           error_message=authz.MESSAGES.get(code))


async def _plan(ctx: RequestContext, group_id: str, topic_ids: list[bytes]) -> state_ops.DeleteOffsetsPlan:
    untracked = ctx.shares.state_partitions(group_id)

    def begin(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return state_ops.begin_delete_offsets(shard, group_id, topic_ids, untracked)
    try:
        plan: state_ops.DeleteOffsetsPlan = await ctx.groups.call(group_id, begin)
    except ApiError as exc:
        return state_ops.DeleteOffsetsPlan(exc.code)
    return plan


async def handle(ctx: RequestContext, header: RequestHeader, request: DeleteShareGroupOffsetsRequest,
                 version: int) -> DeleteShareGroupOffsetsResponse:
    group_id = request.group_id
    authz.require_group(ctx, authz.Op.DELETE, group_id)
    if not group_id:
        return DeleteShareGroupOffsetsResponse(error_code=ErrorCode.INVALID_GROUP_ID)
    readable = authz.authorized(ctx, authz.Op.READ, authz.TOPIC, (t.topic_name for t in request.topics))
    denied = [Topic(topic_name=t.topic_name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    error_message=authz.MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED])
              for t in request.topics if t.topic_name not in readable]
    known = {t.topic_name: ctx.topics.get(t.topic_name) for t in request.topics
             if t.topic_name in readable}
    ids = list(dict.fromkeys(bytes(i.topic_id) for i in known.values() if i is not None))
    plan = await _plan(ctx, group_id, ids)
    if plan.error_code != ErrorCode.NONE:
        return DeleteShareGroupOffsetsResponse(error_code=plan.error_code)
    for topic_id in plan.eligible:
        await ctx.shares.delete_state(group_id, topic_id)

    def complete(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return state_ops.complete_delete_offsets(shard, group_id, list(plan.eligible))
    await ctx.groups.call(group_id, complete)
    ok, errors = [], []
    for name, info in known.items():
        if info is None:
            errors.append(Topic(topic_name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                error_message=UNKNOWN_TOPIC))
        elif bytes(info.topic_id) in plan.eligible:
            ok.append(Topic(topic_name=name, topic_id=info.topic_id))
        else:
            errors.append(Topic(topic_name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                error_message=NO_OFFSETS))
    return DeleteShareGroupOffsetsResponse(responses=denied + ok + errors)
