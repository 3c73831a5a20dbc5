"""Classic JoinGroup (`GroupMetadataManager.classicGroupJoin*`).

New members of v4+ dynamic clients get MEMBER_ID_REQUIRED and become pending; everyone
else is added and the group rebalances. A parked join is a reply token stored on the
member; its reply leaves through `Effects.reply` when the join phase completes.
"""

from __future__ import annotations

from groupcoord.coordinator.classic import rebalance, responses, static
from groupcoord.coordinator.classic.effects import Effects, heartbeat_key
from groupcoord.coordinator.classic.group import ClassicGroup, ClassicGroupMember
from groupcoord.coordinator.classic.join_request import JoinArgs, park_join, update_member
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.ids import IdSource
from groupcoord.coordinator.result import OpContext
from groupcoord.wire.errors import ErrorCode

S = ClassicGroupState


def accept_joining_member(group: ClassicGroup, args: JoinArgs, max_size: int) -> bool:
    """`GroupMetadataManager.acceptJoiningMember`, tightened so `group.members` never
    grows past `max_size`.

    Kafka admits a newcomer during PreparingRebalance while fewer than `max_size` members
    await a join, so a full group that starts a rebalance briefly holds more members
    than the limit (existing members that have not rejoined yet, plus the newcomers), and
    a static member that never rejoins stays past the join phase. Here a member keeps
    its seat until it is removed: a newcomer needs a free seat in every state, and only
    rejoining members are ranked by the awaiting count, which still lets the last of them
    be kicked out when the limit was lowered. A static member re-registering under a new
    id replaces itself and adds no one (as `throwIfConsumerGroupIsFull` does).
    """
    if group.is_in(S.EMPTY, S.DEAD):
        return True
    existing = group.members.get(args.member_id)
    if existing is None:
        if args.member_id == "" and group.static_member_id(args.instance_id) is not None:
            return True
        return len(group.members) < max_size
    if group.is_in(S.PREPARING_REBALANCE):
        return existing.awaiting_join or group.num_awaiting_join() < max_size
    return True


def join(group: ClassicGroup, args: JoinArgs, ctx: OpContext, ids: IdSource,
         fx: Effects) -> object | None:
    """Run a join against `group`; returns the direct response or None when parked."""
    if not accept_joining_member(group, args, fx.config.group_max_size):
        group.remove(args.member_id)
        return responses.join_error(args.version, ErrorCode.GROUP_MAX_SIZE_REACHED, "")
    if args.member_id == "":
        return _join_new_member(group, args, ctx, ids, fx)
    return _join_existing_member(group, args, ctx, fx)


def _join_new_member(group: ClassicGroup, args: JoinArgs, ctx: OpContext, ids: IdSource,
                     fx: Effects) -> object | None:
    if group.is_in(S.DEAD):
        return responses.join_error(args.version, ErrorCode.COORDINATOR_NOT_AVAILABLE, "")
    if not group.supports_protocols(args.protocol_type, args.protocol_names):
        return responses.join_error(args.version, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    new_id = ids.member_id(args.instance_id if args.instance_id is not None else ctx.client_id)
    if args.instance_id is not None:
        if group.static_member_id(args.instance_id) is not None:
            return static.replace_static_member_and_rebalance(group, args, new_id, ctx, fx)
        return add_member_and_rebalance(group, args, new_id, ctx, fx)
    if args.version >= 4:
        # Two-step join (KIP-394): hand out the id, expect the member back with it.
        group.pending_join_members[new_id] = fx.schedule(
            heartbeat_key(group.group_id, new_id), args.session_timeout_ms)
        return responses.join_error(args.version, ErrorCode.MEMBER_ID_REQUIRED, new_id)
    return add_member_and_rebalance(group, args, new_id, ctx, fx)


def _join_existing_member(group: ClassicGroup, args: JoinArgs, ctx: OpContext,
                          fx: Effects) -> object | None:
    mid = args.member_id
    if group.is_in(S.DEAD):
        return responses.join_error(args.version, ErrorCode.COORDINATOR_NOT_AVAILABLE, mid)
    if not group.supports_protocols(args.protocol_type, args.protocol_names):
        return responses.join_error(args.version, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, mid)
    if group.is_pending(mid):
        return add_member_and_rebalance(group, args, mid, ctx, fx)
    error = validate_existing_member(group, mid, args.instance_id)
    if error != ErrorCode.NONE:
        return responses.join_error(args.version, error, mid)
    member = group.members[mid]
    reason = f"Member {mid} is joining group during {group.state.value}; client reason: " \
             f"{args.reason}"
    if group.is_in(S.PREPARING_REBALANCE):
        return update_member_and_rebalance(group, member, args, ctx, fx, reason)
    if group.is_in(S.COMPLETING_REBALANCE):
        if member.matches(args.protocols):
            # A retry of a join whose answer was lost: answer with the current generation.
            return responses.generation_join_response(
                group, mid, args.version, group.is_leader(mid))
        return update_member_and_rebalance(group, member, args, ctx, fx, reason)
    if group.is_in(S.STABLE):
        if group.is_leader(mid) or not member.matches(args.protocols):
            # The leader rejoins to force a rebalance (e.g. topic metadata changed).
            return update_member_and_rebalance(group, member, args, ctx, fx, reason)
        return responses.generation_join_response(group, mid, args.version, False)
    return responses.join_error(args.version, ErrorCode.UNKNOWN_MEMBER_ID, mid)


def validate_existing_member(group: ClassicGroup, member_id: str,
                             instance_id: str | None) -> int:
    """`ClassicGroup.validateMember`: UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID / NONE."""
    if instance_id is None:
        return ErrorCode.NONE if group.has_member(member_id) else ErrorCode.UNKNOWN_MEMBER_ID
    existing = group.static_member_id(instance_id)
    if existing is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if existing != member_id:
        return ErrorCode.FENCED_INSTANCE_ID
    return ErrorCode.NONE


def add_member_and_rebalance(group: ClassicGroup, args: JoinArgs, member_id: str,
                             ctx: OpContext, fx: Effects) -> object | None:
    """Add a new member and rebalance; the join is parked (returns None)."""
    member = ClassicGroupMember(
        member_id=member_id, group_instance_id=args.instance_id, client_id=ctx.client_id,
        client_host=ctx.client_host, rebalance_timeout_ms=args.rebalance_timeout_ms,
        session_timeout_ms=args.session_timeout_ms, protocol_type=args.protocol_type,
        protocols=args.protocols, is_new=True)
    if group.is_in(S.PREPARING_REBALANCE) and group.previous_state is S.EMPTY:
        group.new_member_added = True
    group.add(member)
    park_join(member, ctx, args.version)
    # A parked new member cannot heartbeat; bound how long its join may hang.
    rebalance.schedule_heartbeat(fx, group, member, fx.config.new_member_join_timeout_ms)
    fx.event(group.group_id, "member_joined", group.generation_id, member_id, args.reason,
             instance_id=args.instance_id, client_id=ctx.client_id,
             client_host=ctx.client_host)
    rebalance.maybe_prepare_rebalance_or_complete_join(
        group, fx, f"Adding new member {member_id} with group instance id "
                   f"{args.instance_id}; client reason: {args.reason}")
    return None


def update_member_and_rebalance(group: ClassicGroup, member: ClassicGroupMember,
                                args: JoinArgs, ctx: OpContext, fx: Effects,
                                reason: str) -> object | None:
    """Update a member's protocols and rebalance; the join is parked (returns None)."""
    update_member(member, args, ctx)
    rebalance.maybe_prepare_rebalance_or_complete_join(group, fx, reason)
    return None
