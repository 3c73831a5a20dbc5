"""DescribeProducers (key 61, v0): the producers a partition's state holds.

Mirrors `KafkaApis.handleDescribeProducersRequest` + `Partition.activeProducerState`: per
partition each producer id with its epoch, last sequence, last timestamp, the coordinator
epoch of its last marker and the first offset of its open transaction (-1 if none).
Unknown topics or partitions -> UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 0


def _partition(ctx: RequestContext, topic: Any, name: str, index: int) -> PartitionResponse:
    resp = PartitionResponse(partition_index=index, error_code=0, active_producers=[])
    if topic is None or not 0 <= index < topic.num_partitions:
        resp.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return resp
    state = ctx.producer_state(name, index)
    for pid, entry in sorted(state.producers.items()):
        resp.active_producers.append(ProducerState(
            producer_id=pid, producer_epoch=entry.epoch, last_sequence=entry.last_seq,
            last_timestamp=entry.last_timestamp, coordinator_epoch=entry.coordinator_epoch,
            current_txn_start_offset=entry.txn_first_offset))
    return resp


async def handle(ctx: RequestContext, header: RequestHeader, request: DescribeProducersRequest,
                 version: int) -> DescribeProducersResponse:
    topics = []
    for t in request.topics:
        topic = ctx.topics.get(t.name)
        if not authz.allowed(ctx, authz.Op.READ, authz.TOPIC, t.name):
            topics.append(TopicResponse(name=t.name, partitions=[
                PartitionResponse(partition_index=i, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                  error_message=authz.MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED])
                for i in t.partition_indexes]))
            continue
        topics.append(TopicResponse(name=t.name, partitions=[
            _partition(ctx, topic, t.name, i) for i in t.partition_indexes]))
    return DescribeProducersResponse(topics=topics)
