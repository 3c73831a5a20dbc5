"""ConsumerGroupHeartbeat for joining and active members (`GroupMetadataManager.
consumerGroupHeartbeat`, the private overload), in Kafka's order: group, size check,
member and epoch check, member metadata, regexes, group epoch, target assignment,
reconciliation, timers. Leaving (epoch -1/-2) lives in `membership`.

The operation computes on values (the updated member, the new target) and emits records;
the group itself changes only when the runtime replays them. Regexes are validated and
recorded here, and resolved later by the refresh operation (`regex_refresh`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from groupcoord.coordinator.assignment_interval import can_compute_next_target
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.consumer import records as rec
from groupcoord.coordinator.consumer import regex_refresh, timers
from groupcoord.coordinator.consumer.errors import HeartbeatError
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.member import ConsumerGroupMember, same_partitions
from groupcoord.coordinator.consumer.reconcile import FencedMemberEpoch, reconcile
from groupcoord.coordinator.consumer.subscription import (
    member_topic_ids,
    metadata_hash,
    subscribed_names,
)
from groupcoord.coordinator.consumer.target import (
    AssignorFailure,
    compute_target,
    preferred_assignor,
)
from groupcoord.coordinator.consumer.target_offload import offload_target
from groupcoord.coordinator.result import OpContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)

E = ErrorCode


def owned_partitions(request: Any) -> dict[bytes, frozenset[int]] | None:
    if request.topic_partitions is None:
        return None
    return {bytes(tp.topic_id): frozenset(tp.partitions) for tp in request.topic_partitions}


def new_member_id(mgr: Any) -> str:
    """Kafka's `Uuid.randomUuid().toString()` (consumerGroupHeartbeat,
    classicGroupJoinToConsumerGroup), not the classic `prefix-UUID` form."""
    return str(mgr.ids.uuid())


def _validate_epoch(member: ConsumerGroupMember, epoch: int,
                    owned: dict[bytes, frozenset[int]] | None) -> None:
    """`throwIfConsumerGroupMemberEpochIsInvalid` (epoch 0 = rejoin, always accepted)."""
    if epoch == 0 or epoch == member.member_epoch:
        return
    if epoch < member.member_epoch and epoch == member.previous_member_epoch \
            and owned is not None and all(ps <= member.assigned.get(t, {}).keys()
                                          for t, ps in owned.items()):
        return  # the response of the previous heartbeat was lost
    raise HeartbeatError(E.FENCED_MEMBER_EPOCH,
                         f"The consumer group member has a {'larger' if epoch > member.member_epoch else 'smaller'} "
                         f"member epoch ({epoch}) than the one known by the group coordinator "
                         f"({member.member_epoch}). The member must abandon all its partitions "
                         f"and rejoin.")


class Step:
    """The values one heartbeat computes before they become records."""

    def __init__(self, mgr: Any, group: ConsumerGroup, fx: Effects) -> None:
        self.mgr = mgr
        self.group = group
        self.fx = fx
        self.regexes = {rx: r.topics for rx, r in group.regexes.items()}
        self.replaced: str | None = None
        self.is_new = False
        self.regex_refresh: frozenset[str] | None = None


def find_member(step: Step, request: Any, owned: dict[bytes, frozenset[int]] | None
                ) -> ConsumerGroupMember:
    group, epoch, member_id = step.group, request.member_epoch, request.member_id
    instance_id = request.instance_id
    cfg = step.mgr.config
    static_known = instance_id is not None and instance_id in group.static
    if not static_known and len(group.members) >= cfg.group_consumer_max_size \
            and (not member_id or member_id not in group.members):
        raise HeartbeatError(E.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of "
                             f"{cfg.group_consumer_max_size} members.")
    if instance_id is None or epoch != 0:
        if instance_id is not None:
            existing = group.static.get(instance_id)
            if existing is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                     f"Instance id {instance_id} is unknown.")
            if existing != member_id:
                raise HeartbeatError(E.FENCED_INSTANCE_ID,
                                     f"Static member {member_id} with instance id "
                                     f"{instance_id} was fenced by member {existing}.")
        member = group.members.get(member_id) if member_id else None
        if member is None:
            if epoch != 0:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group "
                                     f"{group.group_id}.")
            step.is_new = True
            return ConsumerGroupMember(member_id or new_member_id(step.mgr))
        _validate_epoch(member, epoch, owned)
        return member
    return _static_join(step, member_id, instance_id)


def _static_join(step: Step, member_id: str, instance_id: str) -> ConsumerGroupMember:
    """`getOrMaybeSubscribeStaticConsumerGroupMember` for epoch 0."""
    group = step.group
    existing_id = group.static.get(instance_id)
    if existing_id is None or existing_id == member_id:
        member = group.members.get(member_id) if member_id else None
        if member is None:
            step.is_new = True
            return ConsumerGroupMember(member_id or new_member_id(step.mgr))
        return member
    old = group.members[existing_id]
    if old.member_epoch != -2 and old.classic is None:
        raise HeartbeatError(E.UNRELEASED_INSTANCE_ID,
                             f"Static member {existing_id} with instance id {instance_id} "
                             f"is not released yet by its previous member.")
    step.replaced = existing_id
    return replace(old, member_id=member_id or new_member_id(step.mgr), member_epoch=0,
                   previous_member_epoch=0)


def join_or_heartbeat(mgr: Any, group: ConsumerGroup, request: Any, ctx: OpContext,
                      fx: Effects) -> ConsumerGroupHeartbeatResponse:
    step = Step(mgr, group, fx)
    owned = owned_partitions(request)
    member = find_member(step, request, owned)
    updated = _updated_member(member, request, ctx)
    reconciled = update_and_reconcile(step, member, updated, owned, ctx)
    timers.schedule_session(mgr, group.group_id, reconciled, fx)
    full = request.rebalance_timeout_ms != -1 and request.topic_partitions is not None and (
        request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
    send = request.member_epoch == 0 or full or \
        not same_partitions(reconciled.assigned, member.assigned)
    return ConsumerGroupHeartbeatResponse(
        member_id=reconciled.member_id, member_epoch=reconciled.member_epoch,
        heartbeat_interval_ms=mgr.heartbeat_interval_ms(group.group_id),
        assignment=assignment_of(reconciled) if send else None)


def update_and_reconcile(step: Step, member: ConsumerGroupMember,
                         updated: ConsumerGroupMember,
                         owned: dict[bytes, frozenset[int]] | None,
                         ctx: OpContext) -> ConsumerGroupMember:
    """Steps 4-8 of the heartbeat, shared with classic members joining a consumer group:
    member records, regexes, group epoch, target assignment, reconciliation."""
    mgr, group, fx = step.mgr, step.group, step.fx
    before = group.members.get(step.replaced) if step.replaced else \
        (None if step.is_new else member)
    names_changed = _member_records(step, member, updated)
    regex_result = regex_refresh.maybe_update_regexes(step, member, updated)
    sub_changed = names_changed or regex_result != regex_refresh.NO_CHANGE
    # A regex not resolved yet does not bump: its refresh will (Kafka's comment: "we will
    # have to update the target assignment again later").
    bump = group.group_epoch == 0 or names_changed or \
        regex_result == regex_refresh.REGEX_UPDATED_AND_RESOLVED
    epoch = _maybe_bump_epoch(step, before, updated, bump)
    target_epoch, target = _maybe_update_target(step, updated, epoch)
    subscribed = member_topic_ids(updated, step.regexes, mgr.image)
    replaced = step.replaced

    def owner_of(topic_id: bytes, partition: int) -> str | None:
        owner = group.partition_owner(topic_id, partition)
        return updated.member_id if owner is not None and owner == replaced else owner

    try:
        reconciled = reconcile(updated, target_epoch, target, subscribed, owned, owner_of,
                               sub_changed or bump)
    except FencedMemberEpoch as exc:
        raise HeartbeatError(E.FENCED_MEMBER_EPOCH,
                             "The consumer group member is in an unknown state.") from exc
    regex_refresh.arm(step, ctx.topic_filter)
    if step.is_new or reconciled.assignment_key() != updated.assignment_key():
        fx.records.append(rec.current_assignment(group.group_id, reconciled))
        timers.after_reconcile(mgr, group.group_id, updated, reconciled, fx)
    if step.replaced:
        timers.cancel_member(group.group_id, step.replaced, fx, mgr)
    if step.is_new or step.replaced:
        fx.event(group.group_id, "member_joined", epoch, reconciled.member_id, None,
                 instance_id=reconciled.instance_id, client_id=ctx.client_id,
                 client_host=ctx.client_host,
                 protocol="classic" if reconciled.classic is not None else "consumer")
    return reconciled


def assignment_of(m: ConsumerGroupMember) -> Assignment:
    return Assignment(topic_partitions=[TopicPartitions(topic_id=t, partitions=sorted(ps))
                                        for t, ps in sorted(m.assigned.items()) if ps])


def _updated_member(member: ConsumerGroupMember, request: Any, ctx: OpContext
                    ) -> ConsumerGroupMember:
    names = member.subscribed_topic_names
    if request.subscribed_topic_names is not None:
        names = tuple(sorted(set(request.subscribed_topic_names)))
    regex = member.subscribed_topic_regex
    if request.subscribed_topic_regex is not None:
        regex = request.subscribed_topic_regex or None
    return replace(
        member,
        instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                              else member.rebalance_timeout_ms),
        server_assignor=(request.server_assignor if request.server_assignor is not None
                         else member.server_assignor),
        subscribed_topic_names=names, subscribed_topic_regex=regex,
        client_id=ctx.client_id, client_host=ctx.client_host, classic=None)


def _member_records(step: Step, member: ConsumerGroupMember, updated: ConsumerGroupMember
                    ) -> bool:
    """The member records (`hasMemberSubscriptionChanged`); True if the subscribed topic
    names changed."""
    gid, records = step.group.group_id, step.fx.records
    if step.replaced:
        records.extend(rec.member_removal(gid, step.replaced))
    if step.is_new or step.replaced or updated.metadata_key() != member.metadata_key():
        records.append(rec.member_metadata(gid, updated))
    if step.replaced:
        records.append(rec.target_member(gid, updated.member_id,
                                         step.group.target.get(step.replaced, {})))
        records.append(rec.current_assignment(gid, updated))
    return set(updated.subscribed_topic_names) != set(member.subscribed_topic_names)


def _maybe_bump_epoch(step: Step, before: ConsumerGroupMember | None,
                      updated: ConsumerGroupMember, bump: bool) -> int:
    group = step.group
    if not bump and not group.refresh_needed:
        return group.group_epoch
    # The flag is soft state (Kafka's metadata refresh deadline): this heartbeat does it.
    group.refresh_needed = False
    removed = [before] if before is not None else []
    names = subscribed_names(group, step.regexes, removed, [updated])
    new_hash = metadata_hash(names, step.mgr.image)
    if not bump and new_hash == group.metadata_hash:
        return group.group_epoch
    epoch = group.group_epoch + 1
    step.fx.records.append(rec.group_metadata(group.group_id, epoch, new_hash))
    reason = ("member joined" if before is None else "member subscription changed" if bump
              else "topic metadata changed")
    step.fx.event(group.group_id, "group_epoch_bumped", epoch, updated.member_id, reason,
                  protocol="consumer")
    return epoch


def _maybe_update_target(step: Step, updated: ConsumerGroupMember, epoch: int
                         ) -> tuple[int, Mapping[bytes, frozenset[int]]]:
    group, mgr = step.group, step.mgr
    targets = group.target
    own_target = targets.get(step.replaced or updated.member_id, {})
    if group.assignment_epoch >= epoch or not can_compute_next_target(
            group.assignment_timestamp_ms, mgr.assignment_interval_ms(group.group_id),
            step.fx.now_ms):
        # Up to date, or batched: the member reconciles toward the last target, and the
        # first heartbeat after the interval computes one target for every change since.
        return group.assignment_epoch, own_target
    members = dict(group.members)
    if step.replaced:
        members.pop(step.replaced, None)
        targets = dict(targets)
        targets[updated.member_id] = targets.pop(step.replaced, {})
    members[updated.member_id] = updated
    assignor = preferred_assignor(members, mgr.config.group_consumer_assignors[0])
    # The first target is computed here even when offloading: a member takes the target's
    # epoch, and before any target that is 0, which means "join" on its next heartbeat.
    if mgr.config.group_consumer_assignor_offload_enable and group.assignment_epoch > 0:
        # Resolved here, once per distinct subscription: the worker thread reads no group state.
        resolved: dict[tuple[tuple[str, ...], str | None], frozenset[bytes]] = {}
        for m in members.values():
            key = (m.subscribed_topic_names, m.subscribed_topic_regex)
            if key not in resolved:
                resolved[key] = member_topic_ids(m, step.regexes, mgr.image)
        offload_target(mgr.groups, mgr.targets_in_flight, group.group_id, members,
                       dict(targets),
                       lambda m: resolved[(m.subscribed_topic_names, m.subscribed_topic_regex)],
                       mgr.image, assignor, epoch, step.fx)
        return group.assignment_epoch, own_target
    try:
        new_target = compute_target(
            group.group_id, members, targets,
            lambda m: member_topic_ids(m, step.regexes, mgr.image), mgr.image, assignor,
            epoch, step.fx.now_ms, step.fx.records)
    except AssignorFailure as exc:
        raise HeartbeatError(E.UNKNOWN_SERVER_ERROR, str(exc)) from exc
    return epoch, new_target.get(updated.member_id, {})
