"""DeleteRecords (key 21, v0-v2): move partitions' log start offsets forward.

Mirrors `ReplicaManager.deleteRecords` / `deleteRecordsOnLocalLog` + `Partition.
deleteRecordsOnLeader` for a single replica: offset -1 means the high watermark; an offset
below 0 or above the high watermark -> OFFSET_OUT_OF_RANGE; internal topics ->
INVALID_TOPIC_EXCEPTION; unknown partitions -> UNKNOWN_TOPIC_OR_PARTITION. The answer is
the new low watermark (log start offset). Whole segments below it are removed.
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.delete_records import (
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 2
HIGH_WATERMARK = -1


def _delete(ctx: RequestContext, name: str, p: Any) -> DeleteRecordsPartitionResult:
    result = DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1,
                                          error_code=0)
    topic = ctx.topics.get(name)
    plog = None if topic is None else ctx.topics.log(name, p.partition_index)
    if topic is not None and topic.internal:
        result.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
    elif plog is None:
        result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    else:
        hw = plog.log_end_offset
        offset = hw if p.offset == HIGH_WATERMARK else p.offset
        if not 0 <= offset <= hw:
            result.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
        else:
            result.low_watermark = ctx.topics.delete_records(name, p.partition_index, offset)
    return result


async def handle(ctx: RequestContext, header: RequestHeader, request: DeleteRecordsRequest,
                 version: int) -> DeleteRecordsResponse:
    deletable = authz.authorized(ctx, authz.Op.DELETE, authz.TOPIC, (t.name for t in request.topics))
    topics = [
        DeleteRecordsTopicResult(name=t.name, partitions=[
            _delete(ctx, t.name, p) if t.name in deletable else DeleteRecordsPartitionResult(
                partition_index=p.partition_index, low_watermark=-1,
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            for p in t.partitions])
        for t in request.topics
    ]
    return DeleteRecordsResponse(topics=topics)
