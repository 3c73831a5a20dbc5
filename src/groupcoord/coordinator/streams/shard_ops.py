"""The streams-group operations of `GroupCoordinatorShard`, kept out of the shard module.

Mirrors the streams branches of Kafka's `GroupMetadataManager`: a streams heartbeat for a
group id held by a consumer, share or non-empty classic group is GROUP_ID_NOT_FOUND "Group
g is not a streams group." (`getOrCreateStreamsGroup`), while an empty classic group (one
with offsets only) is replaced; DeleteGroups deletes an Empty streams group with its
offsets.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.responses import join_error
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.offsets import expiry
from groupcoord.coordinator.records import group_tombstone
from groupcoord.coordinator.result import OpContext, Result
from groupcoord.coordinator.shard_groups import ShardGroups
from groupcoord.coordinator.streams.group import StreamsGroup, StreamsGroupState
from groupcoord.coordinator.streams.heartbeat import HeartbeatResult
from groupcoord.coordinator.streams.offsets import validate_commit
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.delete_groups import DeletableGroupResult
from groupcoord.wire.generated.streams_group_heartbeat import StreamsGroupHeartbeatResponse


def heartbeat(shard: ShardGroups, request: Any, version: int, ctx: OpContext,
              now_ms: int, overrides: Mapping[str, str] | None) -> Result:
    """The response is a `HeartbeatResult` (response + internal topics to create)."""
    group_id = request.group_id
    classic = shard.classic.get(group_id)
    other = group_id in shard.consumer.groups or group_id in shard.share.groups \
        or (classic is not None and not classic.is_in(ClassicGroupState.EMPTY))
    if other and group_id not in shard.streams.groups:
        return Result(response=HeartbeatResult(StreamsGroupHeartbeatResponse(
            error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
            error_message=f"Group {group_id} is not a streams group.")))
    result = shard.streams.streams_group_heartbeat(request, version, ctx, now_ms, overrides)
    if classic is not None and request.member_epoch == 0 and result.records:
        result.records[:0] = [group_tombstone(group_id)]
    return result


def classic_join(shard: ShardGroups, request: Any, version: int, ctx: OpContext,
                 now_ms: int) -> Result:
    """JoinGroup on a streams group's id (`GroupMetadataManager.classicGroupJoin`): a
    group with members answers INCONSISTENT_GROUP_PROTOCOL; an empty one is deleted and
    the join creates a classic group (`maybeDeleteEmptyStreamsGroup`)."""
    group = shard.streams.groups[request.group_id]
    if group.members:
        return Result(response=join_error(version, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""))
    tombstones: list[Any] = []
    shard.streams.delete_records(group, tombstones)
    result = shard.classic.join_group(request, version, ctx, now_ms)
    result.records[:0] = tombstones
    return result


def describe(shard: ShardGroups, group_id: str) -> Result:
    other = group_id in shard.consumer.groups or group_id in shard.share.groups \
        or group_id in shard.classic.groups
    return Result(response=shard.streams.describe(group_id, other))


def delete_group(shard: ShardGroups, group: StreamsGroup,
                 fx: Effects) -> DeletableGroupResult:
    error = shard.streams.validate_delete(group)
    if error == ErrorCode.NONE:
        shard.delete_offsets(group.group_id, fx.records)
        shard.streams.delete_records(group, fx.records)
        fx.event(group.group_id, "group_deleted", group.group_epoch,
                 reason="DeleteGroups request")
    return DeletableGroupResult(group_id=group.group_id, error_code=int(error))


def commit_verdict(shard: ShardGroups, group: StreamsGroup, member_id: str,
                   instance_id: str | None, epoch: int, version: int,
                   transactional: bool) -> tuple[int, Any]:
    return validate_commit(group, member_id, instance_id, epoch, version, transactional,
                           shard.streams.image)


def _subscribed(group: StreamsGroup) -> set[str]:
    """`StreamsGroup.isSubscribedToTopic`: the topology's input topics while the group has
    members; an empty group subscribes to nothing, so its offsets can expire."""
    if group.topology is None or group.state() == StreamsGroupState.EMPTY:
        return set()
    return {topic for s in group.topology.subtopologies.values()
            for topic in [*s.source_topics, *(t.name for t in s.repartition_source_topics)]}


def cleanup_expired_offsets(shard: ShardGroups, fx: Effects,
                            retention_ms: int) -> None:
    """Offsets expire by commit time (`StreamsGroup.offsetExpirationCondition`); an empty
    group left with none is deleted (`maybeDeleteGroup`)."""
    for group_id in sorted(shard.streams.groups):
        group = shard.streams.groups[group_id]
        expiry.cleanup_modern_group(shard.offsets, group_id, group.group_epoch,
                                    _subscribed(group), bool(group.members),
                                    partial(shard.streams.delete_records, group), fx,
                                    retention_ms)
