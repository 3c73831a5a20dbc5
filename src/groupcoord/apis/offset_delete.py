"""OffsetDelete (API 47, v0): unknown topics or partitions answer
UNKNOWN_TOPIC_OR_PARTITION here; the rest goes to the group's shard
(`KafkaApis.handleOffsetDeleteRequest`)."""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_support import call_group, partition_exists, topic_info
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, header: RequestHeader, request: OffsetDeleteRequest,
                 version: int) -> OffsetDeleteResponse:
    authz.require_group(ctx, authz.Op.DELETE, request.group_id)
    rejected: list[OffsetDeleteResponseTopic] = []
    valid: list[OffsetDeleteRequestTopic] = []
    readable = authz.authorized(ctx, authz.Op.READ, authz.TOPIC, (t.name for t in request.topics))
    for t in request.topics:
        if t.name not in readable:
            rejected.append(OffsetDeleteResponseTopic(name=t.name, partitions=[
                OffsetDeleteResponsePartition(
                    partition_index=p.partition_index,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in t.partitions]))
            continue
        info = topic_info(ctx, name=t.name)
        good = [p for p in t.partitions if partition_exists(info, p.partition_index)]
        bad = [p for p in t.partitions if not partition_exists(info, p.partition_index)]
        if bad:
            rejected.append(OffsetDeleteResponseTopic(name=t.name, partitions=[
                OffsetDeleteResponsePartition(
                    partition_index=p.partition_index,
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for p in bad]))
        if good:
            valid.append(OffsetDeleteRequestTopic(name=t.name, partitions=good))
    sub = OffsetDeleteRequest(group_id=request.group_id, topics=valid)
    response = await call_group(ctx, request.group_id, GroupCoordinatorShard.offset_delete, sub, version)
    if response.error_code:
        return OffsetDeleteResponse(error_code=response.error_code)
    response.topics.extend(rejected)
    return response
