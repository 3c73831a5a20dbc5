"""Classic SyncGroup (`GroupMetadataManager.classicGroupSyncToClassicGroup`).

The leader's SyncGroup in CompletingRebalance writes the GroupMetadata record with every
member's assignment. Replaying that record is what installs the assignments and moves the
group to Stable (Kafka does the same in the append callback); the parked followers'
replies are computed here and released by the runtime after the append.
"""

from __future__ import annotations

from groupcoord.coordinator.classic import rebalance, responses
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.join import validate_existing_member
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.result import OpContext
from groupcoord.wire.errors import ErrorCode

S = ClassicGroupState


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


def validate_sync(group: ClassicGroup, request, version: int) -> int:
    if group.is_in(S.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    instance_id = request.group_instance_id if version >= 3 else None
    error = validate_existing_member(group, request.member_id, instance_id)
    if error != ErrorCode.NONE:
        return error
    if request.generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if version >= 5 and (_inconsistent(request.protocol_type, group.protocol_type)
                         or _inconsistent(request.protocol_name, group.protocol_name)):
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    return ErrorCode.NONE


def sync(group: ClassicGroup, request, version: int, ctx: OpContext, fx: Effects):
    """Returns the direct response, or None when the reply is parked."""
    error = validate_sync(group, request, version)
    if error != ErrorCode.NONE:
        return responses.sync_response(error)
    if group.is_in(S.PREPARING_REBALANCE):
        return responses.sync_response(ErrorCode.REBALANCE_IN_PROGRESS)
    member = group.members[request.member_id]
    if group.is_in(S.STABLE):
        rebalance.remove_pending_sync_member(group, fx, member.member_id)
        return responses.sync_response(ErrorCode.NONE, member.assignment,
                                       group.protocol_type, group.protocol_name)
    # CompletingRebalance: park until the leader's assignment is persisted.
    member.sync_token = ctx.reply_token
    member.sync_version = version
    rebalance.remove_pending_sync_member(group, fx, member.member_id)
    if group.is_leader(member.member_id):
        _leader_sync(group, request, fx)
    return None


def _leader_sync(group: ClassicGroup, request, fx: Effects) -> None:
    assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}
    for mid in group.members:
        assignments.setdefault(mid, b"")
    fx.records.append(rebalance.metadata_record(group, assignments))
    # Replies go out after the record is appended; replay installs the assignments.
    rebalance.propagate_assignment(group, fx, ErrorCode.NONE, assignments)
    fx.event(group.group_id, "assignment_received", group.generation_id,
             request.member_id, None, members=list(group.members))
