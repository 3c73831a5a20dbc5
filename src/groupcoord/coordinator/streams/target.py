"""The group's target assignment (`maybeUpdateStreamsTargetAssignment` with
`streams.TargetAssignmentBuilder`).

The assignor runs only when the group epoch moved past the assignment epoch and no
initial rebalance delay is pending. Its input is every member's current tasks (not its
target), so tasks stay where they run. Only members whose target changed get a
StreamsGroupTargetAssignmentMember record; the metadata record bumps the assignment epoch.
Warm-up tasks are never assigned here (Kafka decides them while refining).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groupcoord.coordinator.streams import assignor
from groupcoord.coordinator.streams import records as rec
from groupcoord.coordinator.streams.configure import ConfiguredTopology
from groupcoord.coordinator.streams.group import StreamsGroup
from groupcoord.coordinator.streams.member import StreamsGroupMember
from groupcoord.coordinator.streams.tasks import TasksTuple, without_epochs
from groupcoord.coordinator.streams.topology import StreamsTopology

# `AssignmentConfigsImpl` keys. The sticky assignor reads only the standby count; the
# rack-aware tags are recorded (and make a member missing one hear MISSING_CLIENT_TAGS).
NUM_STANDBY_REPLICAS = "num.standby.replicas"
RACK_AWARE_ASSIGNMENT_TAGS = "rack.aware.assignment.tags"


def member_specs(members: Mapping[str, StreamsGroupMember],
                 offsets: Mapping[str, Mapping[tuple[str, int], int]]
                 ) -> dict[str, assignor.MemberSpec]:
    """`createMemberMetadataAndState`: current tasks, not the target."""
    return {m_id: assignor.MemberSpec(m.process_id, without_epochs(m.assigned.active),
                                      dict(m.assigned.standby), dict(offsets.get(m_id, {})))
            for m_id, m in members.items()}


def topology_specs(configured: ConfiguredTopology, topology: StreamsTopology
                   ) -> dict[str, assignor.SubtopologySpec]:
    assert configured.subtopologies is not None
    return {sid: assignor.SubtopologySpec(s.number_of_tasks, bool(s.state_changelog_topics))
            for sid, s in configured.subtopologies.items()}


def compute(group: StreamsGroup, group_epoch: int, members: Mapping[str, StreamsGroupMember],
            current_target: Mapping[str, TasksTuple], configured: ConfiguredTopology,
            topology: StreamsTopology | None, configs: Mapping[str, str], now_ms: int,
            records: list[Any]) -> dict[str, TasksTuple]:
    """`TargetAssignmentBuilder.build`: new target for every member, records for the delta."""
    if configured.is_ready() and topology is not None:
        assigned = assignor.assign(member_specs(members, group.task_offsets),
                                   topology_specs(configured, topology),
                                   int(configs.get(NUM_STANDBY_REPLICAS, "0")))
    else:
        assigned = {m: TasksTuple() for m in members}
    new_target: dict[str, TasksTuple] = {}
    for member_id in sorted(members):
        new = assigned.get(member_id, TasksTuple())
        new_target[member_id] = new
        if current_target.get(member_id) != new:
            records.append(rec.target_member(group.group_id, member_id, new))
    records.append(rec.target_metadata(group.group_id, group_epoch, now_ms))
    return new_target
