"""The rebalance engine of a classic group: prepare, complete the join phase, propagate
assignments, remove members (`GroupMetadataManager` prepareRebalance,
completeClassicGroupJoin, maybeCompleteJoinPhase, tryCompleteInitialRebalanceElseSchedule,
propagateAssignment, removeMemberAndUpdateClassicGroup, expirePendingSync).

Nothing here is written to the log except the GroupMetadata record of a join phase that
ends with no members (Kafka writes nothing for ->PreparingRebalance or ->CompletingRebalance).
"""

from __future__ import annotations

from groupcoord.coordinator.classic import responses
from groupcoord.coordinator.classic.effects import (
    Effects,
    heartbeat_key,
    join_key,
    sync_key,
)
from groupcoord.coordinator.classic.group import ClassicGroup, ClassicGroupMember
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.records import group_metadata_record
from groupcoord.wire.errors import ErrorCode

S = ClassicGroupState


def metadata_record(group: ClassicGroup, assignments: dict[str, bytes] | None = None):
    """GroupMetadata record of the group as it is now (`newGroupMetadataRecord`)."""
    return group_metadata_record(
        group.group_id, group.protocol_type or "", group.generation_id, group.protocol_name,
        group.leader_id, group.state_timestamp_ms, group.member_records(assignments))


def schedule_heartbeat(fx: Effects, group: ClassicGroup, member: ClassicGroupMember,
                       timeout_ms: int | None = None) -> None:
    delay = member.session_timeout_ms if timeout_ms is None else timeout_ms
    member.heartbeat_deadline_ms = fx.schedule(heartbeat_key(group.group_id, member.member_id),
                                               delay)


def complete_join_future(fx: Effects, member: ClassicGroupMember, response_for) -> bool:
    """Release a parked JoinGroup; `response_for(version)` builds the reply."""
    if member.join_token is None:
        return False
    fx.reply(member.join_token, response_for(member.join_version))
    member.join_token = None
    return True


def complete_sync_future(fx: Effects, member: ClassicGroupMember, response) -> bool:
    if member.sync_token is None:
        return False
    fx.reply(member.sync_token, response)
    member.sync_token = None
    return True


def maybe_prepare_rebalance_or_complete_join(group: ClassicGroup, fx: Effects,
                                             reason: str) -> None:
    if group.can_rebalance():
        prepare_rebalance(group, fx, reason)
    else:
        maybe_complete_join_phase(group, fx)


def prepare_rebalance(group: ClassicGroup, fx: Effects, reason: str) -> None:
    if group.is_in(S.COMPLETING_REBALANCE):
        # Parked SyncGroups of this generation can never succeed: send them back to join.
        reset_and_propagate_assignment_with_error(group, fx, ErrorCode.REBALANCE_IN_PROGRESS)
    fx.cancel(sync_key(group.group_id))
    group.sync_timer_generation = None
    initial = group.is_in(S.EMPTY)
    if initial:
        # A new group waits for more members before the first generation (§ initial delay).
        delay = fx.config.group_initial_rebalance_delay_ms
        remaining = max(group.rebalance_timeout_ms() - delay, 0)
        group.initial_delay = (delay, remaining)
        group.join_deadline_ms = fx.schedule(join_key(group.group_id), delay)
    else:
        group.initial_delay = None
    group.transition_to(S.PREPARING_REBALANCE, fx.now_ms)
    fx.event(group.group_id, "rebalance_started", group.generation_id, reason=reason,
             members=list(group.members))
    if not initial:
        maybe_complete_join_else_schedule(group, fx)


def maybe_complete_join_else_schedule(group: ClassicGroup, fx: Effects) -> None:
    if group.has_all_members_joined():
        complete_join(group, fx)
    else:
        group.join_deadline_ms = fx.schedule(join_key(group.group_id),
                                             group.rebalance_timeout_ms())


def maybe_complete_join_phase(group: ClassicGroup, fx: Effects) -> None:
    # While the initial delay runs (previous state Empty) the join phase waits for the timer.
    if (group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined()
            and group.previous_state is not S.EMPTY):
        complete_join(group, fx)


def try_complete_initial_rebalance(group: ClassicGroup, fx: Effects) -> None:
    """The initial-delay timer fired: extend it once per batch of newcomers, else finish."""
    delay, remaining = group.initial_delay or (0, 0)
    if group.new_member_added and remaining != 0:
        group.new_member_added = False
        new_delay = min(fx.config.group_initial_rebalance_delay_ms, remaining)
        group.initial_delay = (new_delay, max(remaining - delay, 0))
        group.join_deadline_ms = fx.schedule(join_key(group.group_id), new_delay)
    else:
        complete_join(group, fx)


def complete_join(group: ClassicGroup, fx: Effects) -> None:
    fx.cancel(join_key(group.group_id))
    group.initial_delay = None
    gone = [m for m in group.members.values() if not m.awaiting_join and not m.is_static]
    for m in gone:
        group.remove(m.member_id)
        fx.cancel(heartbeat_key(group.group_id, m.member_id))
        fx.event(group.group_id, "member_removed", group.generation_id, m.member_id,
                 "did not rejoin before the rebalance timeout")
    if group.is_in(S.DEAD):
        return
    if not group.elect_joined_leader() and group.members:
        # Nobody rejoined: wait another rebalance timeout for session expiry to clean up.
        group.join_deadline_ms = fx.schedule(join_key(group.group_id),
                                             group.rebalance_timeout_ms())
        return
    group.init_next_generation(fx.now_ms)
    if group.is_in(S.EMPTY):
        fx.records.append(metadata_record(group))
        fx.event(group.group_id, "group_empty", group.generation_id)
        return
    _send_join_responses(group, fx)
    fx.event(group.group_id, "rebalance_completed", group.generation_id,
             leader=group.leader_id, protocol=group.protocol_name,
             members=list(group.members))
    schedule_pending_sync(group, fx)


def _send_join_responses(group: ClassicGroup, fx: Effects) -> None:
    for member in group.members.values():
        is_leader = group.is_leader(member.member_id)
        mid = member.member_id
        complete_join_future(fx, member, lambda v, mid=mid, lead=is_leader:
                             responses.generation_join_response(group, mid, v, lead))
        schedule_heartbeat(fx, group, member)
        member.is_new = False
        group.pending_sync_members[member.member_id] = None


def schedule_pending_sync(group: ClassicGroup, fx: Effects) -> None:
    group.sync_timer_generation = group.generation_id
    group.sync_deadline_ms = fx.schedule(sync_key(group.group_id), group.rebalance_timeout_ms())


def remove_pending_sync_member(group: ClassicGroup, fx: Effects, member_id: str) -> None:
    group.pending_sync_members.pop(member_id, None)
    if group.is_in(S.DEAD, S.EMPTY, S.PREPARING_REBALANCE) or not group.pending_sync_members:
        fx.cancel(sync_key(group.group_id))
        group.sync_timer_generation = None


def reset_and_propagate_assignment_with_error(group: ClassicGroup, fx: Effects,
                                              error: int) -> None:
    for m in group.members.values():
        m.assignment = b""
    propagate_assignment(group, fx, error)


def propagate_assignment(group: ClassicGroup, fx: Effects, error: int,
                         assignments: dict[str, bytes] | None = None) -> None:
    """Release parked SyncGroups; `assignments` overrides the stored ones (leader sync)."""
    ok = error == ErrorCode.NONE
    for m in group.members.values():
        assignment = m.assignment if assignments is None else assignments.get(m.member_id, b"")
        resp = responses.sync_response(
            error, assignment if ok else b"",
            group.protocol_type if ok else None, group.protocol_name if ok else None)
        if complete_sync_future(fx, m, resp):
            # The session restarts once the member has its assignment.
            schedule_heartbeat(fx, group, m)


def unknown_member_join(version: int):
    return responses.join_error(version, ErrorCode.UNKNOWN_MEMBER_ID, "")


def remove_member_and_update(group: ClassicGroup, fx: Effects, member: ClassicGroupMember,
                             reason: str) -> None:
    """Drop a member (left or expired) and move the group on."""
    # Tell a parked new member to retry its join.
    complete_join_future(fx, member, unknown_member_join)
    group.remove(member.member_id)
    if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
        maybe_prepare_rebalance_or_complete_join(group, fx, reason)
    elif group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
        complete_join(group, fx)


def remove_pending_member_and_update(group: ClassicGroup, fx: Effects, member_id: str) -> None:
    group.remove(member_id)
    if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
        complete_join(group, fx)


def expire_pending_sync(group: ClassicGroup, fx: Effects) -> None:
    if group.sync_timer_generation != group.generation_id:
        return
    group.sync_timer_generation = None
    if not group.is_in(S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync_members:
        return
    missing = list(group.pending_sync_members)
    for member_id in missing:
        group.remove(member_id)
        fx.cancel(heartbeat_key(group.group_id, member_id))
        fx.event(group.group_id, "member_removed", group.generation_id, member_id,
                 "no SyncGroup before the rebalance timeout")
    prepare_rebalance(group, fx, f"Removing {missing} on pending sync request expiration")
