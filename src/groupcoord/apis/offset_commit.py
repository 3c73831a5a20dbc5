"""OffsetCommit (API 8, v2-10): topic checks as `KafkaApis.handleOffsetCommitRequest`
(v10 unknown topic id -> UNKNOWN_TOPIC_ID; unknown topic or partition ->
UNKNOWN_TOPIC_OR_PARTITION), then the valid partitions go to the group's shard."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_support import call_group, op, partition_exists, topic_info
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 2, 10


def error_response(request: Any, version: int, code: int) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=[
        OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions])
        for t in request.topics])


def _check_topic(ctx: RequestContext, topic: Any, version: int) -> tuple[Any, int]:
    """(topic info, error for the whole topic or 0): unknown id, then READ on the topic,
    then unknown name, in Kafka's order."""
    if version >= 10:
        info = topic_info(ctx, topic_id=topic.topic_id)
        if info is None:
            return None, ErrorCode.UNKNOWN_TOPIC_ID
        name = info.name
    else:
        name = topic.name
        info = topic_info(ctx, name=name)
    if not authz.allowed(ctx, authz.Op.READ, authz.TOPIC, name):
        return info, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return info, (0 if info is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def handle(ctx: RequestContext, header: RequestHeader, request: OffsetCommitRequest,
           version: int) -> Awaitable[OffsetCommitResponse]:
    """Not a coroutine: the usual commit (every partition valid, each named once, v2-9)
    returns the shard's future, whose response is the answer; the others are merged with
    the partitions refused here (`_commit_valid`)."""
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    errors: dict[tuple[int, int], int] = {}
    valid_topics: list[tuple[Any, Any, list[Any]]] = []  # (topic info, topic, its valid partitions)
    for ti, topic in enumerate(request.topics):
        info, error = _check_topic(ctx, topic, version)
        valid = []
        for p in topic.partitions:
            if error:
                errors[(ti, p.partition_index)] = error
            elif not partition_exists(info, p.partition_index):
                errors[(ti, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                valid.append(p)
        if valid:
            valid_topics.append((info, topic, valid))
    if not errors and version < 10 and _distinct_partitions(request):
        # Every partition goes to the shard under the name it came with, each once: the
        # shard's response (one entry per request partition, in order) is the answer.
        fut: Awaitable[OffsetCommitResponse] = ctx.groups.submit(
            request.group_id, op(GroupCoordinatorShard.offset_commit, request, version))
        return fut
    return _commit_valid(ctx, request, version, errors, valid_topics)


async def _commit_valid(ctx: RequestContext, request: OffsetCommitRequest, version: int,
                        errors: dict[tuple[int, int], int],
                        valid_topics: list[tuple[Any, Any, list[Any]]]) -> OffsetCommitResponse:
    answered: dict[tuple[str, int], int] = {}
    if valid_topics:
        sub = OffsetCommitRequest(
            group_id=request.group_id,
            generation_id_or_member_epoch=request.generation_id_or_member_epoch,
            member_id=request.member_id, group_instance_id=request.group_instance_id,
            retention_time_ms=request.retention_time_ms,
            topics=[OffsetCommitRequestTopic(name=info.name, topic_id=topic.topic_id,
                                             partitions=valid)
                    for info, topic, valid in valid_topics])
        response = await call_group(ctx, request.group_id, GroupCoordinatorShard.offset_commit, sub, version)
        answered = {(t.name, p.partition_index): p.error_code
                    for t in response.topics for p in t.partitions}
    return _merge(ctx, request, version, errors, answered)


def _distinct_partitions(request: OffsetCommitRequest) -> bool:
    topics = request.topics
    if len(topics) == 1 and len(topics[0].partitions) == 1:
        return True  # a consumer committing one partition: nothing to compare
    seen = {(t.name, p.partition_index) for t in topics for p in t.partitions}
    return len(seen) == sum(len(t.partitions) for t in topics)


def _merge(ctx: RequestContext, request: Any, version: int, errors: dict[tuple[int, int], int],
           answered: dict[tuple[str, int], int]) -> OffsetCommitResponse:
    topics = []
    for ti, topic in enumerate(request.topics):
        name = topic.name
        if version >= 10:
            info = topic_info(ctx, topic_id=topic.topic_id)
            name = info.name if info is not None else ""
        parts = [OffsetCommitResponsePartition(
            partition_index=p.partition_index,
            error_code=int(errors.get((ti, p.partition_index),
                                      answered.get((name, p.partition_index), 0))))
            for p in topic.partitions]
        topics.append(OffsetCommitResponseTopic(name=topic.name, topic_id=topic.topic_id,
                                                partitions=parts))
    return OffsetCommitResponse(topics=topics)
