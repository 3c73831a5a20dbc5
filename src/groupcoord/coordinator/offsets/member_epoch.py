"""Member-epoch checks of offset commits and fetches for consumer groups
(`ConsumerGroup.validateOffsetCommit`, `validateOffsetFetch`, KIP-848 and KIP-1251).

A commit at the member's epoch is accepted. A commit from an older epoch is checked per
partition: the partition must still be assigned to (or being revoked from) the member,
with an assignment epoch no newer than the commit's epoch; so a member finishing its
work on a partition it is giving up can still commit it, while a zombie cannot. Classic
members inside a consumer group get ILLEGAL_GENERATION where consumer members get
STALE_MEMBER_EPOCH.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from groupcoord.wire.errors import ErrorCode

E = ErrorCode
PartitionCheck = Callable[[bytes | None, int], int]
Key = TypeVar("Key")


class EpochMember(Protocol):
    @property
    def member_epoch(self) -> int: ...


Member = TypeVar("Member", bound=EpochMember)


def assigned_by(epoch: int, key: Key, partition: int, assigned: Mapping[Key, Mapping[int, int]],
                revoking: Mapping[Key, Mapping[int, int]]) -> bool:
    """Whether the member holds `partition` of `key` (a topic id, or a subtopology's task),
    or is revoking it, with an assignment epoch no newer than `epoch`
    (`getAssignmentEpochForPartition`, `getAssignmentEpochForTask`)."""
    found = assigned.get(key, {}).get(partition)
    if found is None:
        found = revoking.get(key, {}).get(partition)
    return found is not None and found <= epoch


def validate_member_fetch(members: Mapping[str, Member], member_id: str | None, epoch: int,
                          stale_error: Callable[[Member], int]) -> int:
    """`validateOffsetFetch`: a fetch outside the group (no member id, epoch < 0) passes;
    else the member must exist and be at `epoch` (`stale_error` when it is not)."""
    if member_id is None and epoch < 0:
        return E.NONE
    member = members.get(member_id or "")
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    return E.NONE if epoch == member.member_epoch else stale_error(member)


def _stale_error(member: Any) -> int:
    """Classic members inside a consumer group speak in generations."""
    return E.ILLEGAL_GENERATION if member.classic is not None else E.STALE_MEMBER_EPOCH


def validate_commit(group: Any, member_id: str, epoch: int, version: int
                    ) -> tuple[int, PartitionCheck | None]:
    """(group-level error, per-partition check for an older epoch or None)."""
    if epoch < 0 and not group.members:
        return E.NONE, None
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID, None
    if member.classic is None and version < 9:
        return E.UNSUPPORTED_VERSION, None
    stale = _stale_error(member)
    if epoch == member.member_epoch:
        return E.NONE, None
    if epoch > member.member_epoch:
        return stale, None

    def check(topic_id: bytes | None, partition: int) -> int:
        if topic_id is None or not assigned_by(epoch, topic_id, partition, member.assigned,
                                               member.pending_revocation):
            return stale
        return E.NONE
    return E.NONE, check


def validate_fetch(group: Any, member_id: str | None, epoch: int) -> int:
    return validate_member_fetch(group.members, member_id, epoch, _stale_error)
