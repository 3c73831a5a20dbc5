"""OffsetForLeaderEpoch (key 23, v2-v4): end offset of a leader epoch.

Mirrors `ReplicaManager.lastOffsetForLeaderEpoch` + `LeaderEpochFileCache.endOffsetFor`
with a single leader epoch, 0, starting at offset 0 (every stored batch carries epoch 0):
asking for epoch 0 gives the log end offset; any other epoch is undefined (-1, -1). A
current leader epoch newer than the partition's (0; on PostgreSQL its lease's) ->
UNKNOWN_LEADER_EPOCH, an older one FENCED_LEADER_EPOCH. Clients use this to validate
their position after a leader change (KIP-320).
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import current_epoch_error, leads
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 2, 4
LEADER_EPOCH = 0


def _end_offset(ctx: RequestContext, topic: str, p: Any) -> EpochEndOffset:
    result = EpochEndOffset(error_code=0, partition=p.partition, leader_epoch=-1, end_offset=-1)
    plog = ctx.topics.log(topic, p.partition)
    if plog is None:
        result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    elif not leads(ctx, topic, p.partition):
        result.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    elif (epoch_error := current_epoch_error(ctx, topic, p.partition,
                                             p.current_leader_epoch)) is not None:
        result.error_code = epoch_error
    elif p.leader_epoch == LEADER_EPOCH:
        result.leader_epoch, result.end_offset = LEADER_EPOCH, plog.log_end_offset
    return result


async def handle(ctx: RequestContext, header: RequestHeader, request: OffsetForLeaderEpochRequest,
                 version: int) -> OffsetForLeaderEpochResponse:
    # Brokers (CLUSTER_ACTION) see every topic; consumers (KIP-320) need DESCRIBE.
    visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.topic for t in request.topics)) \
        if not authz.allowed_on_cluster(ctx, authz.Op.CLUSTER_ACTION) else {t.topic for t in request.topics}
    topics = [
        OffsetForLeaderTopicResult(topic=t.topic,
                                   partitions=[_end_offset(ctx, t.topic, p) for p in t.partitions])
        for t in request.topics if t.topic in visible
    ] + [OffsetForLeaderTopicResult(topic=t.topic, partitions=[
        EpochEndOffset(partition=p.partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                       leader_epoch=-1, end_offset=-1) for p in t.partitions])
        for t in request.topics if t.topic not in visible]
    return OffsetForLeaderEpochResponse(topics=topics)
