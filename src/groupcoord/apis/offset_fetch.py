"""OffsetFetch (API 9, v1-10): one group (v1-7) or several (v8+, split per shard by
group). v10 names topics by id: ids are resolved to names for the coordinator and
unknown ids answer UNKNOWN_TOPIC_ID."""

from __future__ import annotations

from typing import Any

from groupcoord.apis.errors import ApiError
from groupcoord.apis.group_support import UUID_ZERO, call_group, topic_info
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)

API_KEY = 9
MIN_VERSION = 1
MAX_VERSION = 10


def error_response(request: Any, version: int, code: int) -> OffsetFetchResponse:
    if version >= 8:
        return OffsetFetchResponse(groups=[
            OffsetFetchResponseGroup(group_id=g.group_id, error_code=code)
            for g in request.groups])
    # v1 has no top-level error: report it on every requested partition.
    topics = [] if version >= 2 else [
        OffsetFetchResponseTopic(name=t.name, partitions=[
            OffsetFetchResponsePartition(partition_index=p, committed_offset=-1,
                                         metadata="", error_code=code)
            for p in t.partition_indexes])
        for t in request.topics or []]
    return OffsetFetchResponse(error_code=code, topics=topics)


async def handle(ctx: Any, header: Any, request: Any, version: int) -> Any:
    if version < 8:
        return await call_group(ctx, request.group_id, "offset_fetch", request, version)
    groups = []
    for g in request.groups:
        groups.append(await _fetch_group(ctx, request, g, version))
    return OffsetFetchResponse(groups=groups)


async def _fetch_group(ctx: Any, request: Any, group: Any, version: int) -> Any:
    unknown: list[Any] = []
    topics = group.topics
    if version >= 10 and topics is not None:
        known = []
        for t in topics:
            info = topic_info(ctx, topic_id=t.topic_id)
            if info is None:
                unknown.append(t)
            else:
                known.append(OffsetFetchRequestTopics(name=info.name, topic_id=t.topic_id,
                                                      partition_indexes=t.partition_indexes))
        topics = known
    sub = OffsetFetchRequest(require_stable=request.require_stable, groups=[
        OffsetFetchRequestGroup(group_id=group.group_id, member_id=group.member_id,
                                member_epoch=group.member_epoch, topics=topics)])
    try:
        response = await call_group(ctx, group.group_id, "offset_fetch", sub, version)
    except ApiError as exc:
        return OffsetFetchResponseGroup(group_id=group.group_id, error_code=exc.code)
    result = response.groups[0]
    if version >= 10:
        _fill_topic_ids(ctx, result)
    for t in unknown:
        result.topics.append(OffsetFetchResponseTopics(topic_id=t.topic_id, partitions=[
            OffsetFetchResponsePartitions(partition_index=p, committed_offset=-1, metadata="",
                                          error_code=ErrorCode.UNKNOWN_TOPIC_ID)
            for p in t.partition_indexes]))
    return result


def _fill_topic_ids(ctx: Any, group: Any) -> None:
    # Offsets committed by name (v<10) carry no topic id; v10 answers need one.
    for t in group.topics:
        if bytes(t.topic_id) == UUID_ZERO:
            info = topic_info(ctx, name=t.name)
            if info is not None:
                t.topic_id = info.topic_id
