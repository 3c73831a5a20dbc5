"""AlterShareGroupOffsets (API 91, v0): set the start offset of share-partitions
(`GroupCoordinatorService.alterShareGroupOffsets`). An existing share group must have no
members (NON_EMPTY_GROUP); an unknown group id is created as an empty share group (KAFKA-19662,
`getOrMaybeCreateShareGroup(groupId, true)`); a classic or consumer group id is
GROUP_ID_NOT_FOUND; an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION for
that partition. As in Kafka, the altered partitions are first written initializing in
ShareGroupStatePartitionMetadata, the new start offset is persisted as a ShareSnapshot with
no in-flight records, and then they are written initialized."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis import share_state_init
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.share import state_ops
from groupcoord.coordinator.share.state_metadata import TopicInit
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponsePartition,
    AlterShareGroupOffsetsResponseTopic,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 0
REQUEST = AlterShareGroupOffsetsRequest
RESPONSE = AlterShareGroupOffsetsResponse
# `Errors.UNKNOWN_TOPIC_OR_PARTITION.message()`.
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."


async def _topic(ctx: RequestContext, group_id: str,
                 t: Any) -> AlterShareGroupOffsetsResponseTopic:
    topic = ctx.topics.get(t.topic_name)
    out = []
    for p in t.partitions:
        code = ErrorCode.NONE
        if topic is None or not 0 <= p.partition_index < topic.num_partitions:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif p.start_offset < -1:
            code = ErrorCode.INVALID_REQUEST
        else:
            offset = p.start_offset
            if offset == -1:  # "latest" as the admin client's reset-to-latest sends it
                plog = ctx.topics.log(topic.name, p.partition_index)
                offset = plog.log_end_offset if plog is not None else 0
            await ctx.shares.reset_start_offset(group_id, topic, p.partition_index, offset)
        # Kafka sets the error's default message on an unknown topic or partition.
        message = UNKNOWN_TOPIC_MESSAGE if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else None
        out.append(AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index,
                                                           error_code=code,
                                                           error_message=message))
    return AlterShareGroupOffsetsResponseTopic(
        topic_name=t.topic_name, topic_id=topic.topic_id if topic is not None else bytes(16),
        partitions=out)


def _message(code: int, group_id: str) -> str | None:
    """The message of the exception Kafka throws (`throwIfShareGroupIsNotEmpty`,
    `getOrMaybeCreateShareGroup`), which `handleOperationException` puts in the response."""
    if code == ErrorCode.NON_EMPTY_GROUP:
        return "The group is not empty."
    if code == ErrorCode.GROUP_ID_NOT_FOUND:
        return f"Group {group_id} is not a share group."
    return None


def _valid_parts(ctx: RequestContext, topics: list[Any]) -> dict[bytes, TopicInit]:
    """`completeAlterShareGroupOffsets`' initializing map: existing partitions only."""
    out: dict[bytes, TopicInit] = {}
    for t in topics:
        topic = ctx.topics.get(t.topic_name)
        if topic is None:
            continue
        parts = frozenset(p.partition_index for p in t.partitions
                          if 0 <= p.partition_index < topic.num_partitions
                          and p.start_offset >= -1)
        if parts:
            out[bytes(topic.topic_id)] = TopicInit(topic.name, parts)
    return out


def error_response(request: Any, version: int, code: int) -> AlterShareGroupOffsetsResponse:
    """Kafka's `getErrorResponse`: the error with its message, no topics."""
    return AlterShareGroupOffsetsResponse(error_code=code, error_message=authz.MESSAGES.get(code))


def _denied(t: Any) -> AlterShareGroupOffsetsResponseTopic:
    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return AlterShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=[
        AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index,
                                                error_code=code, error_message=authz.MESSAGES[code])
        for p in t.partitions])


async def handle(ctx: RequestContext, header: RequestHeader, request: AlterShareGroupOffsetsRequest,
                 version: int) -> AlterShareGroupOffsetsResponse:
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    if not request.group_id:
        return AlterShareGroupOffsetsResponse(error_code=ErrorCode.INVALID_GROUP_ID)
    readable = authz.authorized(ctx, authz.Op.READ, authz.TOPIC, (t.topic_name for t in request.topics))
    topics = [t for t in request.topics if t.topic_name in readable]
    parts = _valid_parts(ctx, topics)

    def begin(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return state_ops.begin_alter_offsets(shard, request.group_id, parts)
    try:
        code = int(await ctx.groups.call(request.group_id, begin))
    except ApiError as exc:
        code = exc.code
    if code != ErrorCode.NONE:
        return AlterShareGroupOffsetsResponse(error_code=code,
                                              error_message=_message(code, request.group_id))
    responses = [_denied(t) for t in request.topics if t.topic_name not in readable] + \
        [await _topic(ctx, request.group_id, t) for t in topics]
    await share_state_init.mark_initialized(ctx, request.group_id, parts)
    return AlterShareGroupOffsetsResponse(responses=responses)
