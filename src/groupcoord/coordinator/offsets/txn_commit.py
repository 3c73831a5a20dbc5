"""TxnOffsetCommit (`OffsetMetadataManager.commitTransactionalOffset` and
`validateTransactionalOffsetCommit`, with `ClassicGroup` / `ConsumerGroup.validateOffsetCommit`
called with isTransactional=true; KIP-98, KIP-447).

The checks are OffsetCommit's, loosened where a transactional producer cannot know more:
- unknown group: generation < 0 commits (replaying the records makes a simple group),
  otherwise ILLEGAL_GENERATION (GROUP_ID_NOT_FOUND from v6, KIP-1319);
- classic group: no member, no generation and no instance id commits even to a non-empty
  group (v0-2 requests carry none of them), and CompletingRebalance is not refused;
- consumer group: member "", generation -1 and no instance id commits unchecked; the
  OffsetCommit v9 floor for consumer-protocol members does not apply; an older epoch is
  checked per partition (KIP-1251) and a stale partition fails the whole request;
- STALE_MEMBER_EPOCH is reported as ILLEGAL_GENERATION before v6 and as itself from v6
  (`TxnOffsetCommitRequest.supportsStaleMemberEpochError`, KIP-1319);
- a share group takes no offset commits: GROUP_ID_NOT_FOUND at every version
  (`ShareGroup.validateOffsetCommit` throws it and nothing translates it).
The records are plain OffsetCommit records (no expiry) carrying the topic's id, as Kafka 4.4's
`OffsetAndMetadata.fromRequest(topicId, ...)`; the runtime writes them in a transactional
batch of the request's producer, which makes them pending.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.offsets import member_epoch
from groupcoord.coordinator.offsets.commit import validate_classic_commit
from groupcoord.coordinator.offsets.member_epoch import PartitionCheck
from groupcoord.coordinator.records import UUID_ZERO, offset_commit_record
from groupcoord.coordinator.result import Result
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.txn_offset_commit import (
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)

E = ErrorCode
# A version past OffsetCommit's v9 floor: transactional commits are not held to it.
_NO_VERSION_FLOOR = 9
# First version answering GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH as themselves
# (`TxnOffsetCommitRequest.supportsGroupIdNotFoundError` / `supportsStaleMemberEpochError`).
FIRST_PRECISE_ERRORS_VERSION = 6


def error_response(request: Any, error: int) -> TxnOffsetCommitResponse:
    """`TxnOffsetCommitRequest.getErrorResponse`: the error on every partition."""
    return TxnOffsetCommitResponse(topics=[
        TxnOffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            TxnOffsetCommitResponsePartition(partition_index=p.partition_index,
                                             error_code=int(error))
            for p in t.partitions])
        for t in request.topics])


def validate_classic(group: ClassicGroup | None, member_id: str, instance_id: str | None,
                     generation: int, version: int) -> int:
    if group is None:
        if generation < 0:
            return E.NONE
        return (E.GROUP_ID_NOT_FOUND if version >= FIRST_PRECISE_ERRORS_VERSION
                else E.ILLEGAL_GENERATION)
    return validate_classic_commit(group, member_id, instance_id, generation,
                                   transactional=True)


def validate_consumer(group: Any, member_id: str, instance_id: str | None,
                      epoch: int, version: int) -> tuple[int, PartitionCheck | None]:
    if epoch < 0 and not group.members:
        return E.NONE, None
    if epoch == -1 and member_id == "" and instance_id is None:
        # The producer sent no group metadata (pre-KIP-447 clients): nothing to check.
        return E.NONE, None
    error, check = member_epoch.validate_commit(group, member_id, epoch, _NO_VERSION_FLOOR)
    return _stale_for_version(error, version), check


def _stale_for_version(error: int, version: int) -> int:
    if error == E.STALE_MEMBER_EPOCH and version < FIRST_PRECISE_ERRORS_VERSION:
        return E.ILLEGAL_GENERATION
    return error


def txn_offset_commit(request: Any, version: int, fx: Effects, verdict: tuple[int, Any],
                      topic_id_of: Callable[[str], bytes | None]) -> Result:
    """`verdict`: the group-level error and the per-partition check (consumer groups)."""
    if not request.group_id:
        return fx.result(error_response(request, E.INVALID_GROUP_ID))
    error, check = verdict
    if error == E.NONE and check is not None:
        error = _partition_error(request, version, check, topic_id_of,
                                 fx.config.offset_metadata_max_bytes)
    if error != E.NONE:
        return fx.result(error_response(request, error))
    max_bytes = fx.config.offset_metadata_max_bytes
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            metadata = p.committed_metadata
            if metadata is not None and len(metadata) > max_bytes:
                parts.append(TxnOffsetCommitResponsePartition(
                    partition_index=p.partition_index,
                    error_code=int(E.OFFSET_METADATA_TOO_LARGE)))
                continue
            fx.records.append(offset_commit_record(
                request.group_id, t.name, p.partition_index, p.committed_offset,
                p.committed_leader_epoch if version >= 2 else -1, metadata or "",
                fx.now_ms, -1, topic_id_of(t.name) or UUID_ZERO))
            parts.append(TxnOffsetCommitResponsePartition(partition_index=p.partition_index))
        topics.append(TxnOffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id,
                                                   partitions=parts))
    return fx.result(TxnOffsetCommitResponse(topics=topics))


def _partition_error(request: Any, version: int, check: PartitionCheck,
                     topic_id_of: Callable[[str], bytes | None], max_bytes: int) -> int:
    """The first stale partition's error (partitions with too-large metadata are skipped,
    as Kafka validates them only after the metadata check)."""
    for t in request.topics:
        topic_id = topic_id_of(t.name)
        for p in t.partitions:
            metadata = p.committed_metadata
            if metadata is not None and len(metadata) > max_bytes:
                continue
            error = check(topic_id, p.partition_index)
            if error != E.NONE:
                return _stale_for_version(error, version)
    return E.NONE
