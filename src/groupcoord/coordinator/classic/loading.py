"""Replay of GroupMetadata records into classic groups (`GroupMetadataManager.replay`).

While the shard loads, each record rebuilds the group: Empty when it has no members, else
Stable, each member with the single protocol the record stores. Once live, the group in
memory is already ahead of the record (classic paths mutate it directly, as in Kafka);
replay then records the durable view and, for a leader's SyncGroup record, installs the
assignments and completes the move to Stable — the step Kafka runs when that append
succeeds.
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.classic.group import ClassicGroup, ClassicGroupMember
from groupcoord.coordinator.classic.state import ClassicGroupState

S = ClassicGroupState


def canonical(value: Any) -> tuple:
    """The durable content of a GroupMetadataValue as a comparable tuple."""
    members = tuple(
        (m.member_id, m.group_instance_id, m.client_id, m.client_host,
         m.rebalance_timeout, m.session_timeout, bytes(m.subscription), bytes(m.assignment))
        for m in value.members)
    return (value.protocol_type, value.generation, value.protocol, value.leader,
            value.current_state_timestamp, members)


def group_from_record(group_id: str, value: Any) -> ClassicGroup:
    protocol_type = value.protocol_type or None
    group = ClassicGroup(
        group_id=group_id,
        state=S.STABLE if value.members else S.EMPTY,
        state_timestamp_ms=value.current_state_timestamp,
        generation_id=value.generation,
        protocol_type=protocol_type,
        protocol_name=value.protocol,
        leader_id=value.leader,
    )
    for m in value.members:
        rebalance_timeout = m.rebalance_timeout if m.rebalance_timeout >= 0 else m.session_timeout
        member = ClassicGroupMember(
            member_id=m.member_id, group_instance_id=m.group_instance_id,
            client_id=m.client_id, client_host=m.client_host,
            rebalance_timeout_ms=rebalance_timeout, session_timeout_ms=m.session_timeout,
            protocol_type=value.protocol_type,
            protocols=[(value.protocol or "", bytes(m.subscription))],
            assignment=bytes(m.assignment))
        group.members[m.member_id] = member
        if m.group_instance_id is not None:
            group.static_members[m.group_instance_id] = m.member_id
    group.subscribed_topics = group.compute_subscribed_topics()
    group.persisted = canonical(value)
    return group


def apply_live(group: ClassicGroup, value: Any, now_ms: int) -> None:
    """Replay of a record this shard just wrote for a group it holds in memory."""
    group.persisted = canonical(value)
    if (group.is_in(S.COMPLETING_REBALANCE) and value.generation == group.generation_id
            and value.members):
        assignments = {m.member_id: bytes(m.assignment) for m in value.members}
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
        group.transition_to(S.STABLE, now_ms)
