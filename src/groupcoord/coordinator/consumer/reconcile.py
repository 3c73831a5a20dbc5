"""Member reconciliation: move a member one safe step toward its target assignment
(`CurrentAssignmentBuilder`).

The rules that give exclusive ownership: a partition is handed to a member only when no
other member owns or is revoking it (otherwise it is "unreleased" and the member waits in
UNRELEASED_PARTITIONS); and a member that must give partitions up gets nothing new until
its heartbeat no longer lists them (UNREVOKED_PARTITIONS, epoch unchanged).
`owned` is the heartbeat's TopicPartitions: None means "unknown", which counts as still
owning everything pending revocation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from groupcoord.coordinator.consumer.member import ConsumerGroupMember, EpochAssignment
from groupcoord.coordinator.consumer.state import MemberState, transition

Owned = Mapping[bytes, frozenset[int]] | None
OwnerOf = Callable[[bytes, int], str | None]
M = MemberState


class FencedMemberEpoch(Exception):
    """The member is in an UNKNOWN state and claims partitions: fence it."""


def _owns_any(owned: Owned, revoking: EpochAssignment) -> bool:
    if owned is None:
        return any(revoking.values())
    return any(owned.get(t, frozenset()).intersection(ps) for t, ps in revoking.items())


def reconcile(member: ConsumerGroupMember, target_epoch: int,
              target: Mapping[bytes, frozenset[int]], subscribed: frozenset[bytes],
              owned: Owned, owner_of: OwnerOf, subscription_changed: bool
              ) -> ConsumerGroupMember:
    state = member.state
    if state == M.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, target_epoch, target, subscribed, owned, owner_of)
        if subscription_changed:
            return _drop_unsubscribed(member, subscribed, owned)
        return member
    if state == M.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            if subscription_changed:
                return _drop_unsubscribed(member, subscribed, owned)
            return member
        return _next(member, target_epoch, target, subscribed, owned, owner_of)
    if state == M.UNRELEASED_PARTITIONS:
        return _next(member, target_epoch, target, subscribed, owned, owner_of)
    if owned is None or any(owned.values()):
        raise FencedMemberEpoch(member.member_id)
    return _next(member, target_epoch, target, subscribed, owned, owner_of)


def _drop_unsubscribed(member: ConsumerGroupMember, subscribed: frozenset[bytes],
                       owned: Owned) -> ConsumerGroupMember:
    assigned = {t: ps for t, ps in member.assigned.items() if t in subscribed}
    revoking = {t: ps for t, ps in member.assigned.items() if t not in subscribed and ps}
    for t, ps in member.pending_revocation.items():
        revoking.setdefault(t, {}).update(ps)
    if revoking and _owns_any(owned, revoking):
        return replace(member, state=transition(member.state, M.UNREVOKED_PARTITIONS),
                       previous_member_epoch=member.member_epoch, assigned=assigned,
                       pending_revocation=revoking)
    return replace(member, assigned=assigned, pending_revocation={})


def _next(member: ConsumerGroupMember, target_epoch: int,
          target: Mapping[bytes, frozenset[int]], subscribed: frozenset[bytes],
          owned: Owned, owner_of: OwnerOf) -> ConsumerGroupMember:
    """`computeNextAssignment`: keep, revoke, assign or wait, in that order of priority."""
    assigned: EpochAssignment = {}
    revoking: EpochAssignment = {}
    to_assign: dict[bytes, list[int]] = {}
    unreleased = False
    me = member.member_id
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset()) if topic_id in subscribed else frozenset()
        current = member.assigned.get(topic_id, {})
        keep = {p: e for p, e in current.items() if p in wanted}
        if keep:
            assigned[topic_id] = keep
        gone = {p: e for p, e in current.items() if p not in wanted}
        if gone:
            revoking[topic_id] = gone
        for p in wanted:
            if p in current:
                continue
            owner = owner_of(topic_id, p)
            if owner is not None and owner != me:
                unreleased = True
            else:
                to_assign.setdefault(topic_id, []).append(p)
    if revoking and _owns_any(owned, revoking):
        return replace(member, state=transition(member.state, M.UNREVOKED_PARTITIONS),
                       previous_member_epoch=member.member_epoch, assigned=assigned,
                       pending_revocation=revoking)
    for topic_id, parts in to_assign.items():
        assigned.setdefault(topic_id, {}).update(dict.fromkeys(parts, target_epoch))
    state = M.UNRELEASED_PARTITIONS if unreleased else M.STABLE
    return replace(member, state=transition(member.state, state),
                   previous_member_epoch=member.member_epoch, member_epoch=target_epoch,
                   assigned=assigned, pending_revocation={})
