"""Member-epoch checks of offset commits and fetches for streams groups
(`StreamsGroup.validateOffsetCommit`, `createAssignmentEpochValidator`,
`validateOffsetFetch`).

A commit at the member's epoch is accepted; from an older epoch each partition is checked
through the task it feeds: the input topic's subtopology and the partition number name
the task, which must still be the member's (or being revoked from it) with an assignment
epoch no newer than the commit's.
"""

from __future__ import annotations

from groupcoord.coordinator.offsets.member_epoch import (
    PartitionCheck,
    assigned_by,
    validate_member_fetch,
)
from groupcoord.coordinator.streams.group import StreamsGroup
from groupcoord.coordinator.streams.member import StreamsGroupMember
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.errors import ErrorCode

E = ErrorCode


def validate_commit(group: StreamsGroup, member_id: str, instance_id: str | None, epoch: int,
                    version: int, transactional: bool, image: TopicsImage
                    ) -> tuple[int, PartitionCheck | None]:
    """(group-level error, per-partition check for an older epoch or None)."""
    if epoch < 0 and not group.members:
        return E.NONE, None
    if transactional and epoch == -1 and member_id == "" and instance_id is None:
        return E.NONE, None
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID, None
    if not transactional and version < 9:
        return E.UNSUPPORTED_VERSION, None
    if epoch == member.member_epoch:
        return E.NONE, None
    if epoch > member.member_epoch or group.topology is None:
        return E.STALE_MEMBER_EPOCH, None
    source_of = {}
    for s in group.topology.subtopologies.values():
        for topic in list(s.source_topics) + [t.name for t in s.repartition_source_topics]:
            source_of[topic] = s.subtopology_id

    def check(topic_id: bytes | None, partition: int) -> int:
        name = None if topic_id is None else image.name_of(topic_id)
        subtopology = source_of.get(name or "")
        if subtopology is None:
            return E.STALE_MEMBER_EPOCH
        if not assigned_by(epoch, subtopology, partition, member.assigned.active,
                           member.pending_revocation.active):
            return E.STALE_MEMBER_EPOCH
        return E.NONE
    return E.NONE, check


def validate_fetch(group: StreamsGroup, member_id: str | None, epoch: int) -> int:
    return validate_member_fetch(group.members, member_id, epoch, _stale)


def _stale(member: StreamsGroupMember) -> int:
    return E.STALE_MEMBER_EPOCH
