"""OffsetCommit for classic and simple groups (`OffsetMetadataManager.commitOffset`,
`ClassicGroup.validateOffsetCommit`).

A commit to an unknown group with generation < 0 creates a simple group (no GroupMetadata
record; replaying the offset records creates it). Metadata longer than
`offset.metadata.max.bytes` fails that partition only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.coordinator.classic import rebalance
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.join import validate_existing_member
from groupcoord.coordinator.classic.manager import ClassicGroups
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.offsets.member_epoch import PartitionCheck
from groupcoord.coordinator.records import UUID_ZERO, offset_commit_record
from groupcoord.coordinator.result import Result
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

S = ClassicGroupState
# Plain ints: an IntEnum member lookup per partition costs more than the comparison.
_NONE = int(ErrorCode.NONE)
_METADATA_TOO_LARGE = int(ErrorCode.OFFSET_METADATA_TOO_LARGE)


def validate_classic_commit(group: ClassicGroup, member_id: str, instance_id: str | None,
                            generation: int, transactional: bool = False) -> int:
    """`ClassicGroup.validateOffsetCommit`, for OffsetCommit and TxnOffsetCommit."""
    if group.is_in(S.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if generation < 0 and group.is_in(S.EMPTY):
        # Admin tools and consumers without group management commit to empty groups.
        return ErrorCode.NONE
    if generation >= 0 or member_id or instance_id is not None:
        error = validate_existing_member(group, member_id, instance_id)
        if error != ErrorCode.NONE:
            return error
        if generation != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
    elif not transactional and not group.is_in(S.EMPTY):
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not transactional and group.is_in(S.COMPLETING_REBALANCE):
        # The member has its new generation but no assignment yet: let it finish syncing.
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


def _group_error(groups: ClassicGroups, request: Any, version: int) -> int:
    group = groups.get(request.group_id)
    generation = request.generation_id_or_member_epoch
    if group is None:
        if generation < 0:
            return ErrorCode.NONE
        return ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
    instance_id = request.group_instance_id if version >= 7 else None
    return validate_classic_commit(group, request.member_id or "", instance_id, generation)


def error_response(request: Any, error: int) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=[
        OffsetCommitResponseTopic(
            name=t.name, topic_id=t.topic_id,
            partitions=[OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                      error_code=int(error))
                        for p in t.partitions])
        for t in request.topics])


def offset_commit(groups: ClassicGroups, request: Any, version: int, fx: Effects,
                  consumer_check: tuple[int, PartitionCheck | None] | None = None,
                  topic_id_of: Callable[[str], bytes | None] | None = None) -> Result:
    """`consumer_check`: the member-epoch verdict when the group is a consumer group."""
    # "" is a valid group id here: Kafka keeps offset commits for the empty group id for
    # backward compatibility (`GroupCoordinatorService.commitOffsets`; only null is invalid).
    if consumer_check is None:
        error, check = _group_error(groups, request, version), None
    else:
        error, check = consumer_check
    if error != ErrorCode.NONE:
        return fx.result(error_response(request, error))
    now = fx.now_ms
    retention = request.retention_time_ms if 2 <= version <= 4 else -1
    expire = now + retention if retention != -1 else -1
    max_bytes = fx.config.offset_metadata_max_bytes
    records, group_id, with_epoch = fx.records, request.group_id, version >= 6
    topics = []
    for t in request.topics:
        parts = []
        topic_id = None if check is None or topic_id_of is None else topic_id_of(t.name)
        stored_topic_id = bytes(t.topic_id) if version >= 10 else UUID_ZERO
        for p in t.partitions:
            metadata = p.committed_metadata
            error = _NONE if check is None else check(topic_id, p.partition_index)
            if not error and metadata is not None and len(metadata) > max_bytes:
                error = _METADATA_TOO_LARGE
            if error:
                parts.append(OffsetCommitResponsePartition(
                    partition_index=p.partition_index, error_code=int(error)))
                continue
            records.append(offset_commit_record(
                group_id, t.name, p.partition_index, p.committed_offset,
                p.committed_leader_epoch if with_epoch else -1, metadata or "",
                now, expire, stored_topic_id))
            parts.append(OffsetCommitResponsePartition(partition_index=p.partition_index))
        topics.append(OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id,
                                                partitions=parts))
    _refresh_session(groups.get(request.group_id), request.member_id or "", fx)
    return fx.result(OffsetCommitResponse(topics=topics))


def _refresh_session(group: ClassicGroup | None, member_id: str, fx: Effects) -> None:
    # Classic commits keep the member's session alive in Stable and PreparingRebalance.
    if group is None or not group.is_in(S.STABLE, S.PREPARING_REBALANCE):
        return
    member = group.members.get(member_id)
    if member is not None:
        rebalance.schedule_heartbeat(fx, group, member)
