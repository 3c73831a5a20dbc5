"""Online migration between the classic and consumer protocols
(`GroupMetadataManager.convertToConsumerGroup` / `convertToClassicGroup`,
`ConsumerGroup.fromClassicGroup`, `ClassicGroup.fromConsumerGroup`), allowed by
`group.consumer.migration.policy`.

Upgrade: a consumer-protocol join to a non-empty classic group. The GroupMetadata
tombstone and the consumer records of the converted group are written first; the join
then runs against a scratch group built from those records, so the live group changes only
through replay. Downgrade: after a fence leaves only classic members, the consumer records
are tombstoned and a Stable classic group (generation = group epoch, each member's target
as its assignment) is written; a zero-delay timer then starts a classic rebalance on the
replayed group, which tells the members to rejoin.
"""

from __future__ import annotations

import copy

from groupcoord.coordinator.classic import rebalance, responses
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.group import ClassicGroup, ClassicGroupMember
from groupcoord.coordinator.classic.manager import ClassicGroups
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.consumer import records as rec
from groupcoord.coordinator.consumer import timers
from groupcoord.coordinator.consumer.classic_protocol import (
    MalformedProtocol,
    encode_assignment,
    parse_assignment,
    parse_subscription,
    protocol_version,
)
from groupcoord.coordinator.consumer.errors import HeartbeatError
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.manager import ConsumerGroups, Migration, scratch_apply
from groupcoord.coordinator.consumer.member import ClassicMeta, ConsumerGroupMember
from groupcoord.coordinator.consumer.subscription import metadata_hash
from groupcoord.coordinator.records import group_metadata_record, group_tombstone
from groupcoord.logformat.generated.group_metadata import MemberMetadata
from groupcoord.wire.errors import ErrorCode

DOWNGRADED = "consumer-downgraded"


def _refuse(group_id: str, why: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                          f"Cannot upgrade classic group {group_id} to consumer group: {why}.")


def upgrade(mgr: ConsumerGroups, classic: ClassicGroup, fx: Effects) -> ConsumerGroup | None:
    """Records converting `classic`; the scratch consumer group, or None for a new one."""
    gid = classic.group_id
    if classic.is_in(ClassicGroupState.EMPTY) or not classic.members:
        fx.records.append(group_tombstone(gid))
        return None
    cfg = mgr.config
    if not cfg.migration_allows("upgrade"):
        raise _refuse(gid, "the migration policy does not allow upgrades")
    if classic.protocol_type != "consumer":
        raise _refuse(gid, "it is not a consumer group")
    if len(classic.members) > cfg.group_consumer_max_size:
        raise _refuse(gid, "it has more members than group.consumer.max.size")
    members = [_converted(mgr, classic, m) for m in classic.members.values()]
    for cm in classic.members.values():  # parked requests must rejoin the new group
        rebalance.complete_join_future(fx, cm, lambda v, mid=cm.member_id: responses.join_error(
            v, ErrorCode.REBALANCE_IN_PROGRESS, mid))
        rebalance.complete_sync_future(fx, cm, responses.sync_response(
            ErrorCode.REBALANCE_IN_PROGRESS))
    epoch = classic.generation_id
    names = {n for m in members for n in m.subscribed_topic_names}
    records = [group_tombstone(gid)]
    records += [rec.member_metadata(gid, m) for m in members]
    records.append(rec.group_metadata(gid, epoch, metadata_hash(names, mgr.image)))
    records += [rec.target_member(gid, m.member_id, m.assigned) for m in members]
    records.append(rec.target_metadata(gid, epoch, 0))
    records += [rec.current_assignment(gid, m) for m in members]
    fx.records.extend(records)
    scratch = ConsumerGroup(gid)
    scratch_apply(scratch, records)
    fx.cancel(("join", gid))
    fx.cancel(("sync", gid))
    for m in members:
        fx.cancel(("heartbeat", gid, m.member_id))
        timers.schedule_session(mgr, gid, m, fx)
    fx.event(gid, "group_converted", epoch, reason="upgrade to the consumer protocol")
    return scratch


def _converted(mgr: ConsumerGroups, classic: ClassicGroup, m: ClassicGroupMember) -> ConsumerGroupMember:
    try:
        sub = parse_subscription(m.metadata(classic.protocol_name))
        assigned, user_data = parse_assignment(m.assignment)
    except MalformedProtocol as exc:
        raise _refuse(classic.group_id, f"member {m.member_id} has a malformed "
                                        f"subscription or assignment") from exc
    if user_data:
        raise _refuse(classic.group_id, "a member uses a custom client assignor")
    epoch = classic.generation_id
    by_id = {tid: dict.fromkeys(ps, epoch) for t, ps in assigned.items()
             if (tid := mgr.image.topic_id(t)) is not None and ps}
    return ConsumerGroupMember(
        m.member_id, instance_id=m.group_instance_id, rack_id=sub.rack_id,
        client_id=m.client_id, client_host=m.client_host,
        subscribed_topic_names=tuple(sorted(set(sub.topics))),
        rebalance_timeout_ms=m.rebalance_timeout_ms,
        classic=ClassicMeta(m.session_timeout_ms, tuple(m.protocols)),
        member_epoch=epoch, previous_member_epoch=epoch, assigned=by_id)


def maybe_downgrade(mgr: ConsumerGroups, group: ConsumerGroup, fx: Effects) -> None:
    """Called after a fence whose records are in `fx.records` (not yet replayed)."""
    gid = group.group_id
    removed = {r.key.member_id for r in fx.records
               if r.key.RECORD_TYPE == 5 and r.value is None and r.key.group_id == gid}
    remaining = [m for mid, m in group.members.items() if mid not in removed]
    if not remaining or any(m.classic is None for m in remaining):
        return
    if not mgr.config.migration_allows("downgrade") or len(remaining) > mgr.config.group_max_size:
        return
    post = copy.deepcopy(group)
    scratch_apply(post, fx.records)
    protocol = _select_protocol(remaining)
    if protocol is None:
        return
    mgr.delete_records(post, fx.records)
    members = []
    for mid in sorted(post.members):
        m = post.members[mid]
        assert m.classic is not None
        meta = dict(m.classic.protocols).get(protocol, b"")
        members.append(MemberMetadata(
            member_id=mid, group_instance_id=m.instance_id, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.classic.session_timeout_ms, subscription=meta,
            assignment=encode_assignment(post.target.get(mid, {}), mgr.image,
                                         protocol_version(meta))))
        timers.cancel_member(gid, mid, fx, mgr)
        fx.cancel(("consumer-classic-join", gid, mid))
        fx.cancel(("consumer-classic-sync", gid, mid))
    fx.records.append(group_metadata_record(gid, "consumer", post.group_epoch, protocol,
                                            members[0].member_id, fx.now_ms, members))
    fx.schedule((DOWNGRADED, gid), 0)
    fx.event(gid, "group_converted", post.group_epoch, reason="downgrade to the classic protocol")


def _select_protocol(members: list[ConsumerGroupMember]) -> str | None:
    """The first protocol of the first member that every member supports (a vote in
    Kafka; with one shared client library the outcome is the same)."""
    supported = [{n for n, _ in m.classic.protocols} for m in members if m.classic]
    first = members[0].classic
    assert first is not None
    for name, _ in first.protocols:
        if all(name in s for s in supported):
            return name
    return None


def after_downgrade(classic_groups: ClassicGroups, group_id: str, fx: Effects) -> None:
    """The downgrade timer: the replayed classic group starts a rebalance."""
    group = classic_groups.get(group_id)
    if group is None or not group.is_in(ClassicGroupState.STABLE):
        return
    for member in group.members.values():
        rebalance.schedule_heartbeat(fx, group, member)
    rebalance.prepare_rebalance(group, fx, "Group was downgraded from the consumer protocol")


# What the shard gives its consumer groups (`ConsumerGroups`) for online migration.
MIGRATION = Migration(upgrade, maybe_downgrade)
