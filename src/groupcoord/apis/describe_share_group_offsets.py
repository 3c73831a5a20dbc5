"""DescribeShareGroupOffsets (API 90, v0-1): the start offset of each share-partition of
a group, and (v1, KIP-1226) its lag (`GroupCoordinatorService.describeShareGroupOffsets`).

Null topics = every share-partition ShareGroupStatePartitionMetadata lists as initialized
(`describeShareGroupAllOffsets`); an unknown group, or one with none initialized, answers
no topics. A partition without state
answers start offset -1. An unknown topic answers UNKNOWN_TOPIC_OR_PARTITION per
partition. A group id used by a classic or consumer group is GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis import share_group_members
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_support import groups_with_error
from groupcoord.coordinator.share import state_ops
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 1
REQUEST = DescribeShareGroupOffsetsRequest
RESPONSE = DescribeShareGroupOffsetsResponse

Partition = DescribeShareGroupOffsetsResponsePartition


def error_response(request: Any, version: int, code: int) -> DescribeShareGroupOffsetsResponse:
    return DescribeShareGroupOffsetsResponse(groups=groups_with_error(
        DescribeShareGroupOffsetsResponseGroup, (g.group_id for g in request.groups), code))


def _topic(ctx: RequestContext, name: str, partitions: list[int] | None, group_id: str
           ) -> DescribeShareGroupOffsetsResponseTopic:
    topic = ctx.topics.get(name)
    if topic is None:
        return DescribeShareGroupOffsetsResponseTopic(topic_name=name, partitions=[
            Partition(partition_index=p, start_offset=-1, lag=-1,
                      error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            for p in partitions or []])
    out = []
    for index in partitions if partitions is not None else range(topic.num_partitions):
        if not 0 <= index < topic.num_partitions:
            out.append(Partition(partition_index=index, start_offset=-1, lag=-1,
                                 error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        s = ctx.shares.summary(group_id, topic, index)
        out.append(Partition(partition_index=index, start_offset=s.start_offset, leader_epoch=0,
                             lag=s.lag if s.start_offset >= 0 else -1))
    return DescribeShareGroupOffsetsResponseTopic(topic_name=name, topic_id=topic.topic_id,
                                                  partitions=out)


async def _initialized(ctx: RequestContext, group_id: str) -> dict[bytes, set[int]]:
    """`describeShareGroupAllOffsets`: the initialized share-partitions of
    ShareGroupStatePartitionMetadata; for a group that never had that record (state written
    before it was kept), the share-partitions with state."""
    def read(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return state_ops.initialized_partitions(shard, group_id)
    initialized: dict[bytes, set[int]] | str = await ctx.groups.call(group_id, read)
    if isinstance(initialized, dict):
        return initialized
    return dict(ctx.shares.state_partitions(group_id))  # state_ops.LEGACY_STATE


async def _group(ctx: RequestContext, group: Any) -> DescribeShareGroupOffsetsResponseGroup:
    if not authz.allowed(ctx, authz.Op.DESCRIBE, authz.GROUP, group.group_id):
        return DescribeShareGroupOffsetsResponseGroup(
            group_id=group.group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    code = await share_group_members.empty_group_error(ctx, group.group_id)
    if code not in (ErrorCode.NONE, ErrorCode.NON_EMPTY_GROUP):
        return DescribeShareGroupOffsetsResponseGroup(group_id=group.group_id, error_code=code)
    if group.topics is None:
        topics = []
        for topic_id, parts in sorted((await _initialized(ctx, group.group_id)).items()):
            info = ctx.topics.by_id(topic_id)
            if info is not None:
                topics.append(_topic(ctx, info.name, sorted(parts), group.group_id))
        # Offsets of topics the principal may not describe are left out.
        visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.topic_name for t in topics))
        topics = [t for t in topics if t.topic_name in visible]
    else:
        visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC,
                                   (t.topic_name for t in group.topics))
        topics = [_topic(ctx, t.topic_name, t.partitions, group.group_id)
                  for t in group.topics if t.topic_name in visible]
        topics += [DescribeShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=[
            Partition(partition_index=p, start_offset=-1, lag=-1,
                      error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                      error_message=authz.MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED])
            for p in t.partitions]) for t in group.topics if t.topic_name not in visible]
    return DescribeShareGroupOffsetsResponseGroup(group_id=group.group_id, topics=topics)


async def handle(ctx: RequestContext, header: RequestHeader, request: DescribeShareGroupOffsetsRequest,
                 version: int) -> DescribeShareGroupOffsetsResponse:
    return DescribeShareGroupOffsetsResponse(
        groups=[await _group(ctx, group) for group in request.groups])
