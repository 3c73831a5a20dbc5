"""One streams group (`streams.StreamsGroup`): durable state changed only by replaying
its records, plus the soft state Kafka keeps beside it (the configured topology, the
metadata refresh deadline, reported task offsets, a pending shutdown request).

The group state is derived, never stored (`maybeUpdateGroupState`): EMPTY without
members, NOT_READY until the topology of its epoch is validated, ASSIGNING while the
group epoch is ahead of the assignment epoch, RECONCILING until every member is stable
at the assignment epoch, else STABLE. Which process holds each task is indexed as members
change, for the reconciler's "still held elsewhere" checks.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any

from groupcoord.coordinator.streams.configure import ConfiguredTopology
from groupcoord.coordinator.streams.member import MemberState, StreamsGroupMember
from groupcoord.coordinator.streams.tasks import (
    EMPTY,
    NO_TASKS,
    TasksTuple,
    TasksWithEpochs,
    tasks_of,
)
from groupcoord.coordinator.streams.topology import StreamsTopology

# `GroupMetadataManager.METADATA_REFRESH_INTERVAL_MS`.
METADATA_REFRESH_INTERVAL_MS = 10_000


class StreamsGroupState(enum.Enum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class StreamsGroup:
    group_id: str
    # Both epochs start at 1 (`TargetAssignmentMetadata.INITIAL`, KAFKA-20268), so a
    # joined member's epoch is never 0, which would read as a new join.
    group_epoch: int = 1
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    last_assignment_configs: dict[str, str] = field(default_factory=dict)
    stored_description_epoch: int = -1
    failed_description_epoch: int = -1
    assignment_epoch: int = 1
    assignment_timestamp: int = 0
    topology: StreamsTopology | None = None
    members: dict[str, StreamsGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, TasksTuple] = field(default_factory=dict)
    # Soft state.
    configured: ConfiguredTopology | None = None
    refresh_deadline_ms: int = 0
    refresh_epoch: int = -1
    task_offsets: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    task_end_offsets: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    shutdown_requester: str | None = None
    endpoint_epoch: int = 0
    active_owner: dict[tuple[str, int], str] = field(default_factory=dict)
    standby_owners: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    warmup_owners: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)

    # -- derived -------------------------------------------------------------------------
    def state(self) -> StreamsGroupState:
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            return StreamsGroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return StreamsGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def static_member(self, instance_id: str | None) -> StreamsGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return None if member_id is None else self.members.get(member_id)

    def target_of(self, member_id: str) -> TasksTuple:
        return self.target.get(member_id, EMPTY)

    def current_active_process(self, s: str, p: int) -> str | None:
        return self.active_owner.get((s, p))

    def current_standby_processes(self, s: str, p: int) -> set[str]:
        return set(self.standby_owners.get((s, p), {}))

    def current_warmup_processes(self, s: str, p: int) -> set[str]:
        return set(self.warmup_owners.get((s, p), {}))

    def has_metadata_expired(self, now_ms: int) -> bool:
        """`hasMetadataExpired`: the deadline passed, or the write that set it failed."""
        return now_ms >= self.refresh_deadline_ms or self.group_epoch < self.refresh_epoch

    def subscribes_to(self, topic: str) -> bool:
        return self.topology is not None and topic in self.topology.required_topics()

    # -- mutation through replay ---------------------------------------------------------
    def update_member(self, member: StreamsGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._index(old, -1)
        self.members[member.member_id] = member
        self._index(member, +1)
        if old is not None and old.instance_id is not None \
                and old.instance_id != member.instance_id:
            self.static_members.pop(old.instance_id, None)
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._index(old, -1)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self.task_offsets.pop(member_id, None)
        self.task_end_offsets.pop(member_id, None)

    def _index(self, m: StreamsGroupMember, delta: int) -> None:
        """`maybeUpdateTaskProcessId`: assigned and pending-revocation tasks."""
        for tasks in (m.assigned, m.pending_revocation):
            for s, epochs in tasks.active.items():
                for p in epochs:
                    if delta > 0:
                        self.active_owner[(s, p)] = m.process_id
                    elif self.active_owner.get((s, p)) == m.process_id:
                        del self.active_owner[(s, p)]
            for owners, role in ((self.standby_owners, tasks.standby),
                                 (self.warmup_owners, tasks.warmup)):
                for s, parts in role.items():
                    for p in parts:
                        held = owners.setdefault((s, p), {})
                        held[m.process_id] = held.get(m.process_id, 0) + delta
                        if held[m.process_id] <= 0:
                            del held[m.process_id]
                        if not held:
                            del owners[(s, p)]


def replay_member_metadata(group: StreamsGroup, member_id: str, value: Any) -> None:
    old = group.members.get(member_id) or StreamsGroupMember(member_id)
    endpoint = None if value.user_endpoint is None else \
        (value.user_endpoint.host, value.user_endpoint.port)
    group.update_member(replace(
        old, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
        client_host=value.client_host, rebalance_timeout_ms=value.rebalance_timeout_ms,
        topology_epoch=value.topology_epoch, process_id=value.process_id,
        user_endpoint=endpoint,
        client_tags=tuple(sorted((kv.key, kv.value) for kv in value.client_tags))))


def _tasks(ids: list[Any]) -> dict[str, frozenset[int]]:
    return tasks_of((t.subtopology_id, t.partitions) for t in ids)


def _epoch_tasks(ids: list[Any]) -> dict[str, dict[int, int]]:
    out: dict[str, dict[int, int]] = {}
    for t in ids:
        epochs = t.assignment_epochs or [0] * len(t.partitions)
        if t.partitions:
            out.setdefault(t.subtopology_id, {}).update(zip(t.partitions, epochs, strict=True))
    return out


def replay_current_assignment(group: StreamsGroup, member_id: str, value: Any) -> None:
    old = group.members.get(member_id)
    if value is None:
        if old is not None:
            group.update_member(replace(old, member_epoch=-1, previous_member_epoch=-1,
                                        assigned=NO_TASKS, pending_revocation=NO_TASKS))
        return
    base = old or StreamsGroupMember(member_id)
    group.update_member(replace(
        base, member_epoch=value.member_epoch,
        previous_member_epoch=value.previous_member_epoch,
        state=MemberState.of(value.state),
        assigned=TasksWithEpochs(_epoch_tasks(value.active_tasks), _tasks(value.standby_tasks),
                                 _tasks(value.warmup_tasks)),
        pending_revocation=TasksWithEpochs(
            _epoch_tasks(value.active_tasks_pending_revocation),
            _tasks(value.standby_tasks_pending_revocation),
            _tasks(value.warmup_tasks_pending_revocation))))


def target_from_record(value: Any) -> TasksTuple:
    return TasksTuple(_tasks(value.active_tasks), _tasks(value.standby_tasks),
                      _tasks(value.warmup_tasks))
