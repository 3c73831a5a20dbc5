"""ListOffsets (key 2, v1-v10): offsets by timestamp, earliest, latest, max timestamp.

Mirrors `KafkaApis.handleListOffsetRequest` + `UnifiedLog.fetchOffsetByTimestamp` for a
single replica at leader epoch 0: -1 latest (the high watermark, or with isolation level 1,
read_committed, the last stable offset), -2 earliest, -3 the record with the largest
timestamp (v7+), -4 earliest local (= earliest, no tiered storage), -5 latest tiered
(none: -1); otherwise the first offset whose timestamp is at or after the one asked. As
`Partition.fetchOffsetForTimestamp`, a timestamp answer at or past the last fetchable
offset (the LSO for read_committed) is no answer (-1). A partition listed twice ->
INVALID_REQUEST; a current leader epoch newer than the partition's (0; on PostgreSQL its
lease's) -> UNKNOWN_LEADER_EPOCH, an older one FENCED_LEADER_EPOCH.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import current_epoch_error, leads
from groupcoord.storage.config import CorruptBatchError
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 1, 10

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
LEADER_EPOCH = 0
READ_COMMITTED = 1


def error_response(request: ListOffsetsRequest, version: int, code: int
                   ) -> ListOffsetsResponse:
    """Kafka's `ListOffsetsRequest.getErrorResponse`: the error on every partition."""
    return ListOffsetsResponse(topics=[
        ListOffsetsTopicResponse(name=t.name, partitions=[
            ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=code,
                                         timestamp=-1, offset=-1, leader_epoch=-1)
            for p in t.partitions])
        for t in request.topics])


def _lookup(plog: Any, timestamp: int, last_fetchable: int) -> tuple[int, int]:
    """(offset, timestamp) for one partition; (-1, -1) when nothing matches."""
    if timestamp == LATEST:
        return last_fetchable, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return plog.log_start_offset, -1
    if timestamp == LATEST_TIERED:
        return -1, -1
    found = plog.offset_for_timestamp(timestamp)
    if found is None or found[0] >= last_fetchable:
        return -1, -1
    return found[0], found[1]


def _partition(ctx: RequestContext, name: str, p: Any, duplicate: bool,
               version: int, read_committed: bool = False) -> ListOffsetsPartitionResponse:
    resp = ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=0,
                                        timestamp=-1, offset=-1, leader_epoch=-1)
    if duplicate:
        resp.error_code = ErrorCode.INVALID_REQUEST
        return resp
    plog = ctx.topics.log(name, p.partition_index)
    if plog is None:
        resp.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return resp
    if not leads(ctx, name, p.partition_index):
        resp.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        return resp
    epoch_error = current_epoch_error(ctx, name, p.partition_index, p.current_leader_epoch)
    if epoch_error is not None:
        resp.error_code = epoch_error
        return resp
    if p.timestamp == MAX_TIMESTAMP and version < 7:
        resp.error_code = ErrorCode.UNSUPPORTED_VERSION
        return resp
    last_fetchable = plog.log_end_offset
    if read_committed:
        state = ctx.producer_state(name, p.partition_index)
        last_fetchable = int(state.last_stable_offset(last_fetchable))
    try:
        resp.offset, resp.timestamp = _lookup(plog, p.timestamp, last_fetchable)
    except CorruptBatchError:  # damaged stored bytes on the search's way, as Kafka answers
        resp.error_code = ErrorCode.CORRUPT_MESSAGE
        return resp
    if resp.offset >= 0:
        resp.leader_epoch = LEADER_EPOCH
    return resp


async def handle(ctx: RequestContext, header: RequestHeader, request: ListOffsetsRequest,
                 version: int) -> ListOffsetsResponse:
    seen = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    committed = version >= 2 and request.isolation_level == READ_COMMITTED
    topics = []
    visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.name for t in request.topics))
    for t in request.topics:
        if t.name not in visible:
            continue
        parts = [_partition(ctx, t.name, p, seen[(t.name, p.partition_index)] > 1, version,
                            committed) for p in t.partitions]
        topics.append(ListOffsetsTopicResponse(name=t.name, partitions=parts))
    # Kafka answers the topics the principal may not describe after the others.
    topics.extend(ListOffsetsTopicResponse(name=t.name, partitions=[
        ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                     error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                     timestamp=-1, offset=-1, leader_epoch=-1)
        for p in t.partitions]) for t in request.topics if t.name not in visible)
    return ListOffsetsResponse(topics=topics)
