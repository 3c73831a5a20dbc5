"""OffsetFetch requests and responses across versions, and the OffsetDelete response.

v1-7 carry one group at the top level (v2+ null topics = all, with a top-level error);
v8+ carry a list of groups, each answered in the same order.
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.offsets import member_epoch as member_epoch_mod
from groupcoord.coordinator.offsets.fetch import FetchedTopic, TopicQuery, fetch_offsets
from groupcoord.coordinator.offsets.store import UUID_ZERO
from groupcoord.coordinator.streams import offsets as streams_offsets
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.offset_delete import (
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)


def _fetch_group(shard: Any, group_id: str, topics: Any, member_id: str | None = None,
                 member_epoch: int = -1, require_stable: bool = False
                 ) -> tuple[int, list[FetchedTopic]]:
    # "" is a valid group id: Kafka fetches offsets of the empty group id for backward
    # compatibility (`GroupCoordinatorService.fetchOffsets`; only null is invalid).
    consumer = shard.consumer.get(group_id)
    streams = shard.streams.groups.get(group_id)
    if consumer is not None or streams is not None:
        error = member_epoch_mod.validate_fetch(consumer, member_id, member_epoch) \
            if consumer is not None else \
            streams_offsets.validate_fetch(streams, member_id, member_epoch)
        if error != ErrorCode.NONE:
            return error, []
        exists = True
    else:
        group = shard.classic.get(group_id)
        exists = group is not None and not group.is_in(ClassicGroupState.DEAD)
    queries = None if topics is None else [
        TopicQuery(t.name, bytes(getattr(t, "topic_id", None) or UUID_ZERO),
                   list(t.partition_indexes))
        for t in topics]
    return ErrorCode.NONE, fetch_offsets(shard.offsets, exists, group_id, queries,
                                         require_stable)


def offset_fetch(shard: Any, request: Any, version: int) -> OffsetFetchResponse:
    # RequireStable exists from v7; older requests decode it as false.
    stable = bool(request.require_stable) if version >= 7 else False
    if version >= 8:
        groups = []
        for g in request.groups:
            member_id, epoch = (g.member_id, g.member_epoch) if version >= 9 else (None, -1)
            error, topics = _fetch_group(shard, g.group_id, g.topics, member_id, epoch, stable)
            groups.append(group_response(g.group_id, error, topics))
        return OffsetFetchResponse(groups=groups)
    topics_req = request.topics if version >= 2 else (request.topics or [])
    error, topics = _fetch_group(shard, request.group_id, topics_req, require_stable=stable)
    return legacy_response(version, error, topics)


def group_response(group_id: str, error: int, topics: list[FetchedTopic]
                   ) -> OffsetFetchResponseGroup:
    return OffsetFetchResponseGroup(
        group_id=group_id, error_code=int(error),
        topics=[OffsetFetchResponseTopics(
            name=t.name, topic_id=t.topic_id,
            partitions=[OffsetFetchResponsePartitions(
                partition_index=p.partition, committed_offset=p.offset,
                committed_leader_epoch=p.leader_epoch, metadata=p.metadata,
                error_code=p.error_code) for p in t.partitions])
            for t in topics])


def legacy_response(version: int, error: int, topics: list[FetchedTopic]
                    ) -> OffsetFetchResponse:
    resp_topics = [OffsetFetchResponseTopic(
        name=t.name,
        partitions=[OffsetFetchResponsePartition(
            partition_index=p.partition, committed_offset=p.offset,
            committed_leader_epoch=p.leader_epoch, metadata=p.metadata,
            # v0-1 have no top-level error: a group error is reported per partition.
            error_code=int(error) if version < 2 and error else p.error_code)
            for p in t.partitions])
        for t in topics]
    return OffsetFetchResponse(topics=resp_topics, error_code=int(error))


def offset_delete_response(error: int, topics: list[tuple[str, list[tuple[int, int]]]]
                           ) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(
        error_code=int(error),
        topics=[OffsetDeleteResponseTopic(
            name=name, partitions=[OffsetDeleteResponsePartition(partition_index=p,
                                                                 error_code=e)
                                   for p, e in parts])
            for name, parts in topics])
