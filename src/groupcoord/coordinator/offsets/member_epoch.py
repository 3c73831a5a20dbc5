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

from collections.abc import Callable
from typing import Any

from groupcoord.wire.errors import ErrorCode

E = ErrorCode
PartitionCheck = Callable[[bytes | None, int], int]


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
    stale = E.ILLEGAL_GENERATION if member.classic is not None else E.STALE_MEMBER_EPOCH
    if epoch == member.member_epoch:
        return E.NONE, None
    if epoch > member.member_epoch:
        return stale, None

    def check(topic_id: bytes | None, partition: int) -> int:
        if topic_id is None:
            return stale
        assigned = member.assigned.get(topic_id, {}).get(partition)
        if assigned is None:
            assigned = member.pending_revocation.get(topic_id, {}).get(partition)
        return E.NONE if assigned is not None and assigned <= epoch else stale
    return E.NONE, check


def validate_fetch(group: Any, member_id: str | None, epoch: int) -> int:
    if member_id is None and epoch < 0:
        return E.NONE
    member = group.members.get(member_id or "")
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if epoch != member.member_epoch:
        return E.ILLEGAL_GENERATION if member.classic is not None else E.STALE_MEMBER_EPOCH
    return E.NONE
