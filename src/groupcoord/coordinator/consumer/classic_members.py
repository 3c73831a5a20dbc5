"""Classic-protocol members inside a consumer group: JoinGroup, SyncGroup, Heartbeat and
LeaveGroup on a consumer group (`GroupMetadataManager.classicGroupJoinToConsumerGroup`,
`classicGroupSyncToConsumerGroup`, `classicGroupHeartbeatToConsumerGroup`,
`classicGroupLeaveToConsumerGroup`).

A classic member is a consumer-group member whose subscription comes from its JoinGroup
metadata. A JoinGroup runs the same epoch, target and reconciliation steps as a
heartbeat and answers with generation = the member's epoch; the member is never the
leader. SyncGroup hands out the member's current assignment. Heartbeat answers
REBALANCE_IN_PROGRESS whenever the member should rejoin to make progress.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from groupcoord.coordinator.classic import responses
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.join_request import JoinArgs
from groupcoord.coordinator.consumer import timers
from groupcoord.coordinator.consumer.classic_protocol import (
    MalformedProtocol,
    encode_assignment,
    parse_subscription,
    protocol_version,
)
from groupcoord.coordinator.consumer.errors import HeartbeatError
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.heartbeat import Step, new_member_id, update_and_reconcile
from groupcoord.coordinator.consumer.member import ClassicMeta, ConsumerGroupMember
from groupcoord.coordinator.consumer.membership import fence
from groupcoord.coordinator.consumer.state import MemberState
from groupcoord.coordinator.result import OpContext
from groupcoord.wire.errors import ErrorCode

E = ErrorCode
JOIN = "consumer-classic-join"
SYNC = "consumer-classic-sync"
CONSUMER = "consumer"


def _protocols_ok(group: ConsumerGroup, args: JoinArgs) -> bool:
    if args.protocol_type != CONSUMER or not args.protocols:
        return False
    names = set(args.protocol_names)
    for m in group.members.values():
        if m.classic is not None and m.member_id != args.member_id \
                and not names & {n for n, _ in m.classic.protocols}:
            return False
    return True


def join(mgr: Any, group: ConsumerGroup, request: Any, version: int, ctx: OpContext,
         fx: Effects) -> Any:
    # Errors answer member id "" and generation -1: Kafka throws them from the coordinator
    # write and `GroupCoordinatorService.joinGroup` builds a blank JoinGroupResponseData.
    args = JoinArgs(request, version)
    cfg = mgr.config
    if cfg.group_consumer_migration_policy == "disabled":
        return responses.join_error(version, E.INCONSISTENT_GROUP_PROTOCOL)
    if not _protocols_ok(group, args):
        return responses.join_error(version, E.INCONSISTENT_GROUP_PROTOCOL)
    step = Step(mgr, group, fx)
    try:
        member = _find(step, args, version)
        if member is None:  # v4+ dynamic join without an id: hand one out first
            return responses.join_error(version, E.MEMBER_ID_REQUIRED, new_member_id(mgr))
        sub = parse_subscription(args.protocols[0][1])
    except HeartbeatError as exc:
        return responses.join_error(version, exc.code)
    except MalformedProtocol:
        return responses.join_error(version, E.INCONSISTENT_GROUP_PROTOCOL)
    owned = {tid: ps for t, ps in sub.owned.items()
             if (tid := mgr.image.topic_id(t)) is not None}
    updated = replace(
        member, instance_id=args.instance_id, rack_id=sub.rack_id, client_id=ctx.client_id,
        client_host=ctx.client_host, subscribed_topic_names=tuple(sorted(set(sub.topics))),
        subscribed_topic_regex=None, rebalance_timeout_ms=args.rebalance_timeout_ms,
        server_assignor=None,
        classic=ClassicMeta(args.session_timeout_ms, tuple(args.protocols)))
    try:
        reconciled = update_and_reconcile(step, member, updated, owned, ctx)
    except HeartbeatError as exc:
        fx.records.clear()
        return responses.join_error(version, exc.code)
    gid, mid = group.group_id, reconciled.member_id
    timers.schedule_session(mgr, gid, reconciled, fx)
    fx.cancel((JOIN, gid, mid))
    fx.schedule((SYNC, gid, mid), max(0, args.rebalance_timeout_ms))
    return responses.join_response(version, member_id=mid,
                                   generation_id=reconciled.member_epoch,
                                   protocol_type=CONSUMER, protocol_name=args.protocols[0][0])


def _find(step: Step, args: JoinArgs, version: int) -> ConsumerGroupMember | None:
    group, cfg = step.group, step.mgr.config
    known_static = args.instance_id is not None and args.instance_id in group.static
    if not known_static and args.member_id not in group.members \
            and len(group.members) >= cfg.group_consumer_max_size:
        raise HeartbeatError(E.GROUP_MAX_SIZE_REACHED)
    if args.instance_id is not None:
        existing = group.static.get(args.instance_id)
        if existing is not None and (not args.member_id or args.member_id != existing):
            if args.member_id and args.member_id not in group.members:
                raise HeartbeatError(E.FENCED_INSTANCE_ID)
            step.replaced = existing
            return replace(group.members[existing],
                           member_id=args.member_id or new_member_id(step.mgr),
                           member_epoch=0, previous_member_epoch=0)
    if args.member_id and args.member_id in group.members:
        return group.members[args.member_id]
    if not args.member_id and args.instance_id is None and version >= 4:
        return None
    # No pending-member bookkeeping (as in Kafka): the id handed out with
    # MEMBER_ID_REQUIRED simply creates the member when it comes back.
    step.is_new = True
    return ConsumerGroupMember(args.member_id or new_member_id(step.mgr))


def _check_member(group: ConsumerGroup, member_id: str, instance_id: str | None,
                  generation: int) -> tuple[int, ConsumerGroupMember | None]:
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID, None
    if instance_id is not None and member.instance_id != instance_id:
        return E.FENCED_INSTANCE_ID, None
    if member.classic is None:
        return E.UNKNOWN_MEMBER_ID, None
    if generation != member.member_epoch:
        return E.ILLEGAL_GENERATION, None
    return E.NONE, member


def sync(mgr: Any, group: ConsumerGroup, request: Any, version: int, fx: Effects) -> Any:
    instance_id = request.group_instance_id if version >= 3 else None
    error, member = _check_member(group, request.member_id, instance_id,
                                  request.generation_id)
    if member is None:
        return responses.sync_response(error)
    assert member.classic is not None
    first_name, first_meta = member.classic.protocols[0]
    if (request.protocol_type is not None and request.protocol_type != CONSUMER) or \
            (request.protocol_name is not None and request.protocol_name != first_name):
        return responses.sync_response(E.INCONSISTENT_GROUP_PROTOCOL)
    gid = group.group_id
    fx.cancel((SYNC, gid, member.member_id))
    timers.schedule_session(mgr, gid, member, fx)
    if group.assignment_epoch > member.member_epoch \
            and member.state != MemberState.UNREVOKED_PARTITIONS:
        fx.schedule((JOIN, gid, member.member_id), max(0, member.rebalance_timeout_ms))
        return responses.sync_response(E.REBALANCE_IN_PROGRESS)
    payload = encode_assignment(member.assigned, mgr.image, protocol_version(first_meta))
    return responses.sync_response(0, payload, CONSUMER if version >= 5 else None,
                                   first_name if version >= 5 else None)


def heartbeat(mgr: Any, group: ConsumerGroup, request: Any, version: int, fx: Effects) -> int:
    instance_id = request.group_instance_id if version >= 3 else None
    error, member = _check_member(group, request.member_id, instance_id,
                                  request.generation_id)
    if member is None:
        return error
    gid = group.group_id
    timers.schedule_session(mgr, gid, member, fx)
    if _should_rejoin(group, member):
        fx.schedule((JOIN, gid, member.member_id), max(0, member.rebalance_timeout_ms))
        return E.REBALANCE_IN_PROGRESS
    return E.NONE


def _should_rejoin(group: ConsumerGroup, m: ConsumerGroupMember) -> bool:
    if m.member_epoch < group.assignment_epoch or m.state == MemberState.UNREVOKED_PARTITIONS:
        return True
    if m.state != MemberState.UNRELEASED_PARTITIONS:
        return False
    target = group.target.get(m.member_id, {})
    return all(group.partition_owner(t, p) in (None, m.member_id)
               for t, ps in target.items() for p in ps)


def leave(mgr: Any, group: ConsumerGroup, leaving: list[Any], fx: Effects) -> list[int]:
    """Per-member errors; the found members are fenced together (one epoch bump)."""
    errors, found = [], []
    for lm in leaving:
        member = None
        if not lm.member_id and lm.group_instance_id is not None:
            mid = group.static.get(lm.group_instance_id)
            member = group.members.get(mid) if mid is not None else None
            error = E.NONE if member is not None else E.UNKNOWN_MEMBER_ID
        else:
            member = group.members.get(lm.member_id)
            error = E.NONE if member is not None else E.UNKNOWN_MEMBER_ID
            if member is not None and lm.group_instance_id is not None \
                    and member.instance_id != lm.group_instance_id:
                member, error = None, E.FENCED_INSTANCE_ID
        errors.append(int(error))
        if member is not None and member not in found:
            found.append(member)
    if found:
        fence(mgr, group, found, fx, "member_left", "LeaveGroup")
        for m in found:
            fx.cancel((JOIN, group.group_id, m.member_id))
            fx.cancel((SYNC, group.group_id, m.member_id))
        mgr.after_fence(group, fx)
    return errors


def on_timer(mgr: Any, group: ConsumerGroup, kind: str, member_id: str, fx: Effects) -> None:
    """A classic member did not rejoin (join timer) or sync (sync timer) in time."""
    member = group.members.get(member_id)
    if member is None or member.classic is None:
        return
    reason = "did not rejoin in time" if kind == JOIN else "did not sync in time"
    fence(mgr, group, [member], fx, "member_removed", reason)
    mgr.after_fence(group, fx)
