"""Member-epoch checks of offset commits and fetches for streams groups
(`StreamsGroup.validateOffsetCommit`, `createAssignmentEpochValidator`,
`validateOffsetFetch`).

A commit at the member's epoch is accepted; from an older epoch each partition is checked
through the task it feeds: the input topic's subtopology and the partition number name
the task, which must still be the member's (or being revoked from it) with an assignment
epoch no newer than the commit's.
"""

from __future__ import annotations

from collections.abc import Callable

from groupcoord.coordinator.streams.group import StreamsGroup
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.errors import ErrorCode

E = ErrorCode
PartitionCheck = Callable[[bytes | None, int], int]


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
        assigned = member.assigned.active.get(subtopology, {}).get(partition)
        if assigned is None:
            assigned = member.pending_revocation.active.get(subtopology, {}).get(partition)
        return E.NONE if assigned is not None and assigned <= epoch else E.STALE_MEMBER_EPOCH
    return E.NONE, check


def validate_fetch(group: StreamsGroup, member_id: str | None, epoch: int) -> int:
    if member_id is None and epoch < 0:
        return E.NONE
    member = group.members.get(member_id or "")
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    return E.NONE if epoch == member.member_epoch else E.STALE_MEMBER_EPOCH
