"""Leaving and fencing (`GroupMetadataManager.consumerGroupLeave`,
`consumerGroupFenceMembers`, `consumerGroupStaticMemberGroupLeave`) and the timers that
fence.

Fencing removes members with three tombstones each (current assignment, target, member
metadata), drops regexes nobody uses any more, and bumps the group epoch once; an emptied
group also gets TargetAssignmentMetadata at the new epoch so it reads Empty with
assignmentEpoch == groupEpoch. A static member leaving with epoch -2 keeps its place: only
its current assignment is rewritten at epoch -2, and the group epoch does not move.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.consumer import records as rec
from groupcoord.coordinator.consumer import timers
from groupcoord.coordinator.consumer.errors import STATIC_LEAVE_EPOCH, HeartbeatError
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.consumer.state import MemberState
from groupcoord.coordinator.consumer.subscription import metadata_hash, subscribed_names
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse

E = ErrorCode


def leave(mgr: Any, request: Any, fx: Effects) -> ConsumerGroupHeartbeatResponse:
    group = mgr.groups.get(request.group_id)
    if group is None:
        raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {request.group_id} not found.")
    member_id, instance_id = request.member_id, request.instance_id
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group "
                                 f"{group.group_id}.")
    else:
        existing = group.static.get(instance_id)
        if existing is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing != member_id:
            raise HeartbeatError(E.FENCED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {instance_id} "
                                 f"was fenced by member {existing}.")
        member = group.members[existing]
    if request.member_epoch == STATIC_LEAVE_EPOCH:
        temporary_leave(mgr, group, member, fx)
    else:
        fence(mgr, group, [member], fx, "member_left", "the member left the group")
        mgr.after_fence(group, fx)
    return ConsumerGroupHeartbeatResponse(
        member_id=member_id, member_epoch=request.member_epoch,
        heartbeat_interval_ms=0)


def temporary_leave(mgr: Any, group: ConsumerGroup, member: ConsumerGroupMember,
                    fx: Effects) -> None:
    """Epoch -2: keep the partitions (assignment epochs reset to 0) for the rejoin."""
    left = replace(member, member_epoch=STATIC_LEAVE_EPOCH,
                   previous_member_epoch=member.member_epoch, pending_revocation={},
                   assigned={t: dict.fromkeys(ps, 0) for t, ps in member.assigned.items()})
    fx.records.append(rec.current_assignment(group.group_id, left))
    fx.cancel(timers.TIMERS.rebalance_key(group.group_id, member.member_id))
    mgr.rebalance_epochs.pop((group.group_id, member.member_id), None)
    fx.event(group.group_id, "member_left", group.group_epoch, member.member_id,
             "static member left temporarily", instance_id=member.instance_id)


def fence(mgr: Any, group: ConsumerGroup, members: list[ConsumerGroupMember], fx: Effects,
          kind: str, reason: str) -> int:
    """Remove `members`, bump the epoch once; returns the new group epoch."""
    gid = group.group_id
    for m in members:
        fx.records.extend(rec.member_removal(gid, m.member_id))
        timers.cancel_member(gid, m.member_id, fx, mgr)
        fx.event(gid, kind, group.group_epoch, m.member_id, reason,
                 instance_id=m.instance_id)
    regexes = {rx: r.topics for rx, r in group.regexes.items()}
    gone: dict[str, int] = {}
    for m in members:
        if m.subscribed_topic_regex:
            gone[m.subscribed_topic_regex] = gone.get(m.subscribed_topic_regex, 0) + 1
    for rx, count in sorted(gone.items()):
        if group.regex_counts.get(rx, 0) <= count and rx in regexes:
            fx.records.append(rec.regex_tombstone(gid, rx))
            del regexes[rx]
    names = subscribed_names(group, regexes, members)
    epoch = group.group_epoch + 1
    fx.records.append(rec.group_metadata(gid, epoch, metadata_hash(names, mgr.image)))
    fx.event(gid, "group_epoch_bumped", epoch, reason=reason, protocol="consumer")
    if len(group.members) == len(members):
        fx.records.append(rec.target_metadata(gid, epoch, 0))
    return epoch


def on_session_timeout(mgr: Any, group: ConsumerGroup, member_id: str, fx: Effects) -> None:
    member = group.members.get(member_id)
    if member is None:
        return
    fence(mgr, group, [member], fx, "member_expired", "session timeout")
    mgr.after_fence(group, fx)


def on_rebalance_timeout(mgr: Any, group: ConsumerGroup, member_id: str, fx: Effects) -> None:
    armed_epoch = mgr.rebalance_epochs.pop((group.group_id, member_id), None)
    member = group.members.get(member_id)
    if member is None or armed_epoch != member.member_epoch \
            or member.state != MemberState.UNREVOKED_PARTITIONS:
        return
    fence(mgr, group, [member], fx, "member_removed",
          "member did not revoke its partitions within the rebalance timeout")
    mgr.after_fence(group, fx)
