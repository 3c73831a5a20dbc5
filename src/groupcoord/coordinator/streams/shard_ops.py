"""The streams-group operations of `GroupCoordinatorShard`, kept out of the shard module.

Mirrors the streams branches of Kafka's `GroupMetadataManager`: a streams heartbeat for a
group id held by a consumer, share or non-empty classic group is GROUP_ID_NOT_FOUND "Group
g is not a streams group." (`getOrCreateStreamsGroup`), while an empty classic group (one
with offsets only) is replaced; DeleteGroups deletes an Empty streams group with its
offsets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.records import group_tombstone
from groupcoord.coordinator.result import OpContext, Result
from groupcoord.coordinator.streams.group import StreamsGroup
from groupcoord.coordinator.streams.heartbeat import HeartbeatResult
from groupcoord.coordinator.streams.offsets import validate_commit
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.delete_groups import DeletableGroupResult
from groupcoord.wire.generated.streams_group_heartbeat import StreamsGroupHeartbeatResponse

if TYPE_CHECKING:
    from groupcoord.coordinator.shard import GroupCoordinatorShard


def heartbeat(shard: GroupCoordinatorShard, request: Any, version: int, ctx: OpContext,
              now_ms: int) -> Result:
    """The response is a `HeartbeatResult` (response + internal topics to create)."""
    group_id = request.group_id
    classic = shard.classic.get(group_id)
    other = group_id in shard.consumer.groups or group_id in shard.share.groups \
        or (classic is not None and not classic.is_in(ClassicGroupState.EMPTY))
    if other and group_id not in shard.streams.groups:
        return Result(response=HeartbeatResult(StreamsGroupHeartbeatResponse(
            error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
            error_message=f"Group {group_id} is not a streams group.")))
    result = shard.streams.streams_group_heartbeat(request, version, ctx, now_ms)
    if classic is not None and request.member_epoch == 0 and result.records:
        result.records[:0] = [group_tombstone(group_id)]
    return result


def describe(shard: GroupCoordinatorShard, group_id: str) -> Result:
    other = group_id in shard.consumer.groups or group_id in shard.share.groups \
        or group_id in shard.classic.groups
    return Result(response=shard.streams.describe(group_id, other))


def delete_group(shard: GroupCoordinatorShard, group: StreamsGroup,
                 fx: Effects) -> DeletableGroupResult:
    error = shard.streams.validate_delete(group)
    if error == ErrorCode.NONE:
        shard.delete_offsets(group.group_id, fx.records)
        shard.streams.delete_records(group, fx.records)
        fx.event(group.group_id, "group_deleted", group.group_epoch,
                 reason="DeleteGroups request")
    return DeletableGroupResult(group_id=group.group_id, error_code=int(error))


def commit_verdict(shard: GroupCoordinatorShard, group: StreamsGroup, member_id: str,
                   instance_id: str | None, epoch: int, version: int,
                   transactional: bool) -> tuple[int, Any]:
    return validate_commit(group, member_id, instance_id, epoch, version, transactional,
                           shard.streams.image)
