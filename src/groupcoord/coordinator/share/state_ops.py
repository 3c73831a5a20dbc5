"""Shard operations that read or rewrite a share group's ShareGroupStatePartitionMetadata.

Mirrors the write operations `GroupCoordinatorService` chains around the share persister:
the heartbeat's initialization -> `initializeShareGroupState` /
`uninitializeShareGroupState`;
`alterShareGroupOffsets` (initializing, then initialized once the state is written);
`initiateDeleteShareGroupOffsets` / `completeDeleteShareGroupOffsets`; and the read
`initializedShareGroupPartitions` behind DescribeShareGroupOffsets with null topics.
Each returns a `Result` whose response is plain data for the API handler, which does the
persister's part (writing `__share_group_state`) between two of these operations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard_groups import ShardGroups
from groupcoord.coordinator.share import state_metadata as smd
from groupcoord.coordinator.share.group import ShareGroup
from groupcoord.coordinator.share.state_metadata import (
    PartitionMap,
    StatePartitionMetadata,
    TopicInit,
    TopicInits,
)
from groupcoord.wire.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class DeleteOffsetsPlan:
    """`DeleteShareGroupOffsetsResultHolder`: a top-level error, the topics whose state is
    to be deleted, and the known topics without offset information."""

    error_code: int
    eligible: tuple[bytes, ...] = ()
    no_state: tuple[bytes, ...] = ()


# The answer of `initialized_partitions` for a share group whose state predates record 15.
LEGACY_STATE = "legacy-state"


def _other_kind(shard: ShardGroups, group_id: str) -> bool:
    consumer = getattr(shard, "consumer", None)
    return shard.classic.get(group_id) is not None or (
        consumer is not None and consumer.get(group_id) is not None)


def _empty_share_group(shard: ShardGroups, group_id: str
                       ) -> tuple[int, ShareGroup | None]:
    """`GroupMetadataManager.shareGroup` + `ShareGroup.validateEmptyGroup`."""
    group = shard.share.get(group_id)
    if group is None or _other_kind(shard, group_id):
        return ErrorCode.GROUP_ID_NOT_FOUND, None
    if group.members:
        return ErrorCode.NON_EMPTY_GROUP, group
    return ErrorCode.NONE, group


def _write(group: ShareGroup, md: StatePartitionMetadata) -> Result:
    return Result(records=[smd.record(group.group_id, md)], response=ErrorCode.NONE)


def _nothing() -> Result:
    # A None response would park the caller (it means "answered later").
    return Result(response=ErrorCode.NONE)


# -- heartbeat-driven initialization ------------------------------------------------------

def complete_initialize(shard: ShardGroups, group_id: str,
                        done: TopicInits) -> Result:
    """`initializeShareGroupState`: the state is written; mark the partitions initialized."""
    group = shard.share.get(group_id)
    if group is None or not done:
        return _nothing()
    return _write(group, smd.with_initialized(group.state_metadata, done))


def uninitialize(shard: ShardGroups, group_id: str, failed: PartitionMap) -> Result:
    """`uninitializeShareGroupState`: initialization failed; forget the attempt."""
    group = shard.share.get(group_id)
    if group is None or group.state_metadata is None or not group.state_metadata.initializing:
        return _nothing()
    return _write(group, smd.without_initializing(group.state_metadata, failed))


# -- admin ------------------------------------------------------------------------------------

def begin_alter_offsets(shard: ShardGroups, group_id: str,
                        parts: TopicInits) -> Result:
    """`alterShareGroupOffsets`: an existing share group must be empty; a missing one is
    created (`getOrMaybeCreateShareGroup(groupId, true)`, KAFKA-19662) by the record 15
    that writes the altered partitions as initializing. Response: a Kafka error code."""
    if shard.share.get(group_id) is None and not _other_kind(shard, group_id):
        # Nothing is written when no partition is valid, so no group is left behind.
        group: ShareGroup | None = ShareGroup(group_id)
        code: int = ErrorCode.NONE
    else:
        code, group = _empty_share_group(shard, group_id)
    if code != ErrorCode.NONE or group is None:
        return Result(response=code)
    if not parts:
        return Result(response=ErrorCode.NONE)
    result = _write(group, smd.with_initializing(group.state_metadata, parts))
    result.response = ErrorCode.NONE
    return result


def begin_delete_offsets(shard: ShardGroups, group_id: str,
                         topic_ids: list[bytes],
                         untracked: Mapping[bytes, set[int]]) -> Result:
    """`initiateDeleteShareGroupOffsets`: initialized (or still deleting) topics move to
    deleting; the others have no offset information. `untracked` is the share state of a
    group that never had record 15 (written before it was kept), treated as initialized."""
    code, group = _empty_share_group(shard, group_id)
    if code != ErrorCode.NONE or group is None:
        return Result(response=DeleteOffsetsPlan(code))
    md = group.state_metadata
    if md is None:
        md = StatePartitionMetadata(initialized={
            t: TopicInit(shard.share.image.name_of(t) or smd.UNKNOWN_TOPIC_NAME, frozenset(ps))
            for t, ps in untracked.items()})
    eligible = tuple(t for t in topic_ids if t in md.initialized or t in md.deleting)
    plan = DeleteOffsetsPlan(ErrorCode.NONE, eligible,
                             tuple(t for t in topic_ids if t not in eligible))
    result = _write(group, smd.start_deleting(md, eligible))
    result.response = plan
    return result


def complete_delete_offsets(shard: ShardGroups, group_id: str,
                            topic_ids: list[bytes]) -> Result:
    group = shard.share.get(group_id)
    if group is None or group.state_metadata is None:
        return _nothing()
    return _write(group, smd.complete_deleting(group.state_metadata, topic_ids))


def initialized_partitions(shard: ShardGroups, group_id: str) -> Result:
    """`initializedShareGroupPartitions`. The response is never None (that would park the
    caller): `LEGACY_STATE` for a share group without record 15, whose state predates it,
    and an empty map for no group at all, as Kafka answers an unknown group."""
    group = shard.share.get(group_id)
    if group is None or _other_kind(shard, group_id):
        return Result(response={})
    if group.state_metadata is None:
        return Result(response=LEGACY_STATE)
    return Result(response=group.state_metadata.initialized_partitions())
