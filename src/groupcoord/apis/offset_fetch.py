"""OffsetFetch (API 9, v1-10): one group (v1-7) or several (v8+, split per shard by
group). v10 names topics by id: ids are resolved to names for the coordinator and
unknown ids answer UNKNOWN_TOPIC_ID."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.apis.group_support import UUID_ZERO, call_group, groups_with_error, topic_info
from groupcoord.coordinator.offsets.fetch import FetchedPartition, FetchedTopic
from groupcoord.coordinator.offsets.fetch_request import group_response, legacy_response
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 1, 10


def error_response(request: Any, version: int, code: int) -> OffsetFetchResponse:
    if version >= 8:
        return OffsetFetchResponse(groups=groups_with_error(
            OffsetFetchResponseGroup, (g.group_id for g in request.groups), code))
    # v1 has no top-level error: report it on every requested partition.
    topics = [] if version >= 2 else [_failed(t.name, UUID_ZERO, t.partition_indexes, code)
                                      for t in request.topics or []]
    return legacy_response(version, code, topics)


def _failed(name: str, topic_id: bytes, partitions: list[int], code: int) -> FetchedTopic:
    """A requested topic answered `code` on each of its partitions, with no offset; the
    coordinator's response builders turn it into the version's wire entries."""
    return FetchedTopic(name, topic_id, [FetchedPartition(p, -1, -1, "", code)
                                         for p in partitions])


async def handle(ctx: RequestContext, header: RequestHeader, request: OffsetFetchRequest,
                 version: int) -> OffsetFetchResponse:
    if version < 8:
        authz.require_group(ctx, authz.Op.DESCRIBE, request.group_id)
        if not authz.enabled(ctx):
            return await call_group(ctx, request.group_id, GroupCoordinatorShard.offset_fetch, request, version)
        return await _fetch_single_group(ctx, request, version)
    groups = []
    for g in request.groups:
        groups.append(await _fetch_group(ctx, request, g, version))
    return OffsetFetchResponse(groups=groups)


async def _fetch_single_group(ctx: RequestContext, request: Any, version: int) -> Any:
    """v1-7 under an authorizer: only topics the principal may describe, as Kafka's
    `fetchOffsetsForGroup` / `fetchAllOffsetsForGroup`."""
    topics = request.topics
    denied: list[Any] = []
    if topics is not None:
        ok = authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.name for t in topics))
        denied = [t for t in topics if t.name not in ok]
        request = OffsetFetchRequest(group_id=request.group_id, require_stable=request.require_stable,
                                     topics=[t for t in topics if t.name in ok])
    response = await call_group(ctx, request.group_id, GroupCoordinatorShard.offset_fetch, request, version)
    if response.error_code:
        return response
    if topics is None:
        ok = authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.name for t in response.topics))
        response.topics = [t for t in response.topics if t.name in ok]
    response.topics += legacy_response(version, 0, [
        _failed(t.name, UUID_ZERO, t.partition_indexes, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for t in denied]).topics
    return response


def _split_topics(ctx: RequestContext, topics: list[Any], version: int) -> tuple[list[Any], list[Any]]:
    """(topics to ask for, by name; (topic, error) for unknown ids and topics the principal
    may not describe, in request order)."""
    known, failed = [], []
    for t in topics:
        name = t.name
        if version >= 10:
            info = topic_info(ctx, topic_id=t.topic_id)
            if info is None:
                failed.append((t, ErrorCode.UNKNOWN_TOPIC_ID))
                continue
            name = info.name
        if not authz.allowed(ctx, authz.Op.DESCRIBE, authz.TOPIC, name):
            failed.append((t, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        known.append(OffsetFetchRequestTopics(name=name, topic_id=t.topic_id,
                                              partition_indexes=t.partition_indexes))
    return known, failed


async def _fetch_group(ctx: RequestContext, request: Any, group: Any, version: int) -> Any:
    if not authz.allowed(ctx, authz.Op.DESCRIBE, authz.GROUP, group.group_id):
        return OffsetFetchResponseGroup(group_id=group.group_id,
                                        error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    failed: list[Any] = []
    topics = group.topics
    if topics is not None:
        topics, failed = _split_topics(ctx, topics, version)
    sub = OffsetFetchRequest(require_stable=request.require_stable, groups=[
        OffsetFetchRequestGroup(group_id=group.group_id, member_id=group.member_id,
                                member_epoch=group.member_epoch, topics=topics)])
    try:
        response = await call_group(ctx, group.group_id, GroupCoordinatorShard.offset_fetch, sub, version)
    except ApiError as exc:
        return OffsetFetchResponseGroup(group_id=group.group_id, error_code=exc.code)
    result = response.groups[0]
    if result.error_code:
        return result
    if group.topics is None and authz.enabled(ctx):
        ok = authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.name for t in result.topics))
        result.topics = [t for t in result.topics if t.name in ok]
    if version >= 10:
        _fill_topic_ids(ctx, result)
    result.topics += group_response(group.group_id, 0, [
        _failed(t.name if version < 10 else "", t.topic_id, t.partition_indexes, code)
        for t, code in failed]).topics
    return result


def _fill_topic_ids(ctx: RequestContext, group: Any) -> None:
    # Offsets committed by name (v<10) carry no topic id; v10 answers need one.
    for t in group.topics:
        if bytes(t.topic_id) == UUID_ZERO:
            info = topic_info(ctx, name=t.name)
            if info is not None:
                t.topic_id = info.topic_id
