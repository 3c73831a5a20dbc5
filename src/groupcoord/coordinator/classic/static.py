"""Static membership (KIP-345): a known group instance id rejoining with an empty member id
(`GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin`,
`ClassicGroup.replaceStaticMember`).

The old member id is fenced (its parked Join/Sync get FENCED_INSTANCE_ID) and the member is
re-registered under a new id with its old assignment. In Stable, when the selected
protocol would not change, no rebalance happens: the new id is persisted and the member
answered at once; a v9+ leader gets SkipAssignment (KIP-814) with the member list, an
older leader is told the previous leader id so it behaves as a follower.
"""

from __future__ import annotations

from groupcoord.coordinator.classic import rebalance, responses
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.join_request import update_member
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.result import OpContext
from groupcoord.wire.errors import ErrorCode

S = ClassicGroupState


def _fence_old(fx: Effects, group: ClassicGroup, old) -> None:
    rebalance.complete_join_future(fx, old, lambda v: responses.join_response(
        v, error_code=ErrorCode.FENCED_INSTANCE_ID, member_id=old.member_id,
        generation_id=-1, leader=""))
    rebalance.complete_sync_future(fx, old, responses.sync_response(
        ErrorCode.FENCED_INSTANCE_ID))


def replace_static_member_and_rebalance(group: ClassicGroup, args, new_id: str,
                                        ctx: OpContext, fx: Effects) -> object | None:
    instance_id = args.instance_id
    old_id = group.static_members[instance_id]
    previous_leader = group.leader_id or ""
    old, member = group.replace_static_member(instance_id, old_id, new_id)
    _fence_old(fx, group, old)
    fx.event(group.group_id, "member_fenced", group.generation_id, old_id,
             "static member rejoined with a new member id", instance_id=instance_id,
             new_member_id=new_id)
    # The old id's heartbeat timer fires harmlessly; arm the new id's.
    fx.cancel(("heartbeat", group.group_id, old_id))
    rebalance.schedule_heartbeat(fx, group, member)
    update_member(member, args, ctx)
    if group.is_in(S.STABLE):
        if (group.protocol_name or "") == group.select_protocol():
            return _persist_replacement(group, member, args.version, previous_leader, fx)
        rebalance.maybe_prepare_rebalance_or_complete_join(
            group, fx, f"Group's selectedProtocol will change because static member "
                       f"{new_id} with instance id {instance_id} joined with change of "
                       f"protocol; client reason: {args.reason}")
        return None
    if group.is_in(S.COMPLETING_REBALANCE):
        # The leader may already have assigned to the old id: start over.
        rebalance.prepare_rebalance(
            group, fx, f"Updating metadata for static member {new_id} with instance id "
                       f"{instance_id}; client reason: {args.reason}")
        return None
    rebalance.maybe_complete_join_phase(group, fx)
    return None


def _persist_replacement(group: ClassicGroup, member, version: int, previous_leader: str,
                         fx: Effects) -> object:
    fx.records.append(rebalance.metadata_record(group))
    # Answered directly: the reply is released only after the record is appended.
    member.join_token = None
    if version >= 9:
        is_leader = group.is_leader(member.member_id)
        return responses.generation_join_response(
            group, member.member_id, version, with_members=is_leader,
            skip_assignment=is_leader)
    return responses.generation_join_response(
        group, member.member_id, version, with_members=False, leader=previous_leader)
