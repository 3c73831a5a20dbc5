"""Classic LeaveGroup, single and batched (`GroupMetadataManager.classicGroupLeaveToClassicGroup`).

MemberId "" with a known group instance id removes that static member (admin removal).
Pending members are simply dropped. Any removal moves the group on to a new rebalance.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.coordinator.classic import rebalance
from groupcoord.coordinator.classic.effects import Effects, heartbeat_key
from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.join import validate_existing_member
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.wire.errors import ErrorCode

S = ClassicGroupState


@dataclass(frozen=True, slots=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None
    reason: str | None


def leave(group: ClassicGroup, leaving: list[LeavingMember], fx: Effects) -> list[int]:
    """Per-member error codes, in request order."""
    errors = [_leave_one(group, m, fx) for m in leaving]
    left = [m.member_id or str(m.group_instance_id)
            for m, e in zip(leaving, errors, strict=True) if e == ErrorCode.NONE]
    if left:
        reason = f"explicit `LeaveGroup` request for ({', '.join(left)}) members."
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            rebalance.maybe_prepare_rebalance_or_complete_join(group, fx, reason)
        elif group.is_in(S.PREPARING_REBALANCE):
            rebalance.maybe_complete_join_phase(group, fx)
    return errors


def _leave_one(group: ClassicGroup, m: LeavingMember, fx: Effects) -> int:
    reason = m.reason or "not provided"
    if m.member_id == "":
        target = group.static_member_id(m.group_instance_id)
        if target is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        _remove_current(group, target, reason, fx)
        return ErrorCode.NONE
    if group.is_pending(m.member_id):
        group.remove(m.member_id)
        fx.cancel(heartbeat_key(group.group_id, m.member_id))
        return ErrorCode.NONE
    error = validate_existing_member(group, m.member_id, m.group_instance_id)
    if error != ErrorCode.NONE:
        return error
    _remove_current(group, m.member_id, reason, fx)
    return ErrorCode.NONE


def _remove_current(group: ClassicGroup, member_id: str, reason: str, fx: Effects) -> None:
    member = group.members[member_id]
    fx.cancel(heartbeat_key(group.group_id, member_id))
    rebalance.complete_join_future(fx, member, rebalance.unknown_member_join)
    group.remove(member_id)
    fx.event(group.group_id, "member_left", group.generation_id, member_id, reason,
             instance_id=member.group_instance_id)
