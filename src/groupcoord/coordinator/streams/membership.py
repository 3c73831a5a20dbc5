"""Who the heartbeat is from, and members leaving (`GroupMetadataManager`'s
`getOrMaybeCreateDynamicStreamsGroupMember`, `getOrMaybeCreateStaticStreamsGroupMember`,
`throwIfStreamsGroupMemberEpochIsInvalid`, `streamsGroupLeave`, `streamsGroupFenceMember`).

A member that rejoins with epoch 0 keeps its tasks; an epoch ahead of the coordinator's,
or behind it without being the previous epoch with only tasks it still owns, is fenced.
A static member that rejoins under a new member id takes over the old member's target
and current tasks once the old one has left with epoch -2.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.consumer.errors import HeartbeatError
from groupcoord.coordinator.streams import records as rec
from groupcoord.coordinator.streams import timers
from groupcoord.coordinator.streams.group import StreamsGroup
from groupcoord.coordinator.streams.groups_state import StreamsGroupsState
from groupcoord.coordinator.streams.member import StreamsGroupMember
from groupcoord.coordinator.streams.tasks import NO_TASKS
from groupcoord.coordinator.streams.validate import JOIN_EPOCH, STATIC_LEAVE_EPOCH
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import streams_group_heartbeat as wire


def _fenced(message: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, message)


def _contained(owned: list[Any] | None, assigned: dict[str, Any]) -> bool:
    """`areOwnedTasksContainedInAssignedTasks`: unknown (None) is not contained."""
    if owned is None:
        return False
    return all(t.subtopology_id in assigned
               and all(p in assigned[t.subtopology_id] for p in t.partitions) for t in owned)


def check_epoch(member: StreamsGroupMember, epoch: int, request: Any) -> None:
    if epoch == JOIN_EPOCH:
        return
    if epoch > member.member_epoch:
        raise _fenced(f"The streams group member has a greater member epoch ({epoch}) than "
                      f"the one known by the group coordinator ({member.member_epoch}). The "
                      "member must abandon all its partitions and rejoin.")
    if epoch < member.member_epoch:
        a = member.assigned
        if epoch != member.previous_member_epoch \
                or not _contained(request.active_tasks, a.active) \
                or not _contained(request.standby_tasks, a.standby) \
                or not _contained(request.warmup_tasks, a.warmup):
            raise _fenced(f"The streams group member has a smaller member epoch ({epoch}) than "
                          f"the one known by the group coordinator ({member.member_epoch}). "
                          "The member must abandon all its partitions and rejoin.")


def unknown_member(group_id: str, member_id: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                          f"Member {member_id} is not a member of group {group_id}.")


def get_or_create_member(mgr: StreamsGroupsState, group: StreamsGroup, request: Any,
                         records: list[Any]) -> tuple[StreamsGroupMember,
                                                      StreamsGroupMember | None]:
    """(the member, the static member it replaces or None)."""
    member_id, epoch = request.member_id, request.member_epoch
    joining = epoch == JOIN_EPOCH
    instance_id = request.instance_id
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise unknown_member(group.group_id, member_id)
            member = StreamsGroupMember(member_id)
        check_epoch(member, epoch, request)
        return member, None
    existing = group.static_member(instance_id)
    if joining:
        if existing is None:
            return group.members.get(member_id) or StreamsGroupMember(member_id), None
        if existing.member_epoch != STATIC_LEAVE_EPOCH:
            raise HeartbeatError(
                ErrorCode.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} cannot join the "
                f"group because the instance id is owned by {existing.member_id} member.")
        new = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        records.extend(rec.member_removal(group.group_id, existing.member_id))
        records.append(rec.member_metadata(group.group_id, new))
        records.append(rec.target_member(group.group_id, member_id,
                                         group.target_of(existing.member_id)))
        records.append(rec.current_assignment(group.group_id, new))
        return new, existing
    if existing is None:
        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise HeartbeatError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} was fenced by member "
            f"{existing.member_id}.")
    check_epoch(existing, epoch, request)
    return existing, None


def leave(mgr: StreamsGroupsState, request: Any,
          fx: Effects) -> wire.StreamsGroupHeartbeatResponse:
    """`streamsGroupLeave`: epoch -1 removes the member, -2 keeps a static member's place."""
    group = mgr.groups.get(request.group_id)
    if group is None:
        raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"Streams group {request.group_id} not found.")
    if request.shutdown_application and group.shutdown_requester is None:
        group.shutdown_requester = request.member_id
    response = wire.StreamsGroupHeartbeatResponse(member_id=request.member_id,
                                                  member_epoch=request.member_epoch, status=[])
    instance_id = request.instance_id
    if instance_id is None:
        member = group.members.get(request.member_id)
        if member is None:
            raise unknown_member(group.group_id, request.member_id)
        fence(mgr, group, member, fx, "member_left", "member left the group")
        return response
    member = group.static_member(instance_id)
    if member is None:
        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if member.member_id != request.member_id:
        raise HeartbeatError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {request.member_id} with instance id {instance_id} was fenced by "
            f"member {member.member_id}.")
    if request.member_epoch == STATIC_LEAVE_EPOCH:
        leaving = replace(member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation=NO_TASKS,
                          assigned=member.assigned.reset_epochs_to_zero())
        fx.records.append(rec.current_assignment(group.group_id, leaving))
        fx.event(group.group_id, "static_member_left", group.group_epoch,
                 member_id=member.member_id, reason="static member leave (epoch -2)")
        response.member_epoch = STATIC_LEAVE_EPOCH
        return response
    fence(mgr, group, member, fx, "member_left", "static member left the group")
    return response


def fence(mgr: StreamsGroupsState, group: StreamsGroup, member: StreamsGroupMember, fx: Effects,
          kind: str, reason: str) -> None:
    """`streamsGroupFenceMember`: tombstones, then a group epoch bump; the last member
    also moves the assignment epoch (timestamp 0, so no interval delays the next one)."""
    group_id = group.group_id
    fx.records.extend(rec.member_removal(group_id, member.member_id))
    epoch = group.group_epoch + 1
    fx.records.append(rec.group_metadata(group_id, epoch, group.metadata_hash,
                                         group.validated_topology_epoch,
                                         group.last_assignment_configs,
                                         group.stored_description_epoch,
                                         group.failed_description_epoch))
    if len(group.members) == 1:
        fx.records.append(rec.target_metadata(group_id, epoch, 0))
    fx.event(group_id, kind, epoch, member_id=member.member_id, reason=reason,
             instance_id=member.instance_id)
    fx.event(group_id, "group_epoch_bumped", epoch, reason=reason, protocol="streams")
    timers.TIMERS.cancel(group_id, member.member_id, fx, mgr.rebalance_epochs)
