"""CreatePartitions (key 37, v0-v3): grow a topic's partition count.

Mirrors `ReplicationControlManager.createPartitions`: unknown topic ->
UNKNOWN_TOPIC_OR_PARTITION; a count not above the current one -> INVALID_PARTITIONS;
assignments naming another broker -> INVALID_REPLICA_ASSIGNMENT; duplicate topics in a
request -> INVALID_REQUEST; `validate_only` changes nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 3


def _grow(ctx: RequestContext, topic: Any, validate_only: bool) -> None:
    current = ctx.topics.get(topic.name)
    if current is None:
        raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       f"Topic {topic.name} does not exist.")
    if topic.count < current.num_partitions:
        raise ApiError(ErrorCode.INVALID_PARTITIONS,
                       f"Topic currently has {current.num_partitions} partitions, which is "
                       f"higher than the requested {topic.count}.")
    if topic.count == current.num_partitions:
        raise ApiError(ErrorCode.INVALID_PARTITIONS,
                       f"Topic already has {current.num_partitions} partitions.")
    if topic.assignments is not None:
        added = topic.count - current.num_partitions
        if len(topic.assignments) != added or any(
                a.broker_ids != [ctx.config.node_id] for a in topic.assignments):
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "Each new partition must be assigned to exactly this broker.")
    if not validate_only:
        ctx.topics.add_partitions(topic.name, topic.count)


async def handle(ctx: RequestContext, header: RequestHeader, request: CreatePartitionsRequest,
                 version: int) -> CreatePartitionsResponse:
    counts = Counter(t.name for t in request.topics)
    results = []
    for topic in request.topics:
        result = CreatePartitionsTopicResult(name=topic.name, error_code=0)
        try:
            if counts[topic.name] > 1:
                raise ApiError(ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
            authz.require(ctx, authz.Op.ALTER, authz.TOPIC, topic.name,
                          ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            _grow(ctx, topic, request.validate_only)
        except ApiError as exc:
            result.error_code, result.error_message = exc.code, exc.message
        results.append(result)
    return CreatePartitionsResponse(results=results)
