"""StreamsGroupHeartbeat for joining and active members
(`GroupMetadataManager.streamsGroupHeartbeat`), in Kafka's five steps:

1. create or update the member (a metadata change bumps the group epoch);
2. initialise the topology from the first member, or check a joining member's against it;
3. validate the topology against the topics image and list internal topics to create
   (re-done when the topology is new, the topics changed, or every 10 s);
4. recompute the target assignment when the group epoch moved past it;
5. reconcile the member toward its target (revoke before assign).

The handler reads state and returns records; soft state (configured topology, reported
task offsets, refresh deadline) is updated in place, as Kafka's non-timeline fields are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.consumer.errors import HeartbeatError
from groupcoord.coordinator.streams import endpoints, timers
from groupcoord.coordinator.streams import records as rec
from groupcoord.coordinator.streams import target as target_assignment
from groupcoord.coordinator.streams.configure import (
    ConfiguredTopology,
    IllegalTopologyState,
    InternalTopic,
    InvalidTopology,
    Status,
    configure_topics,
)
from groupcoord.coordinator.streams.group import METADATA_REFRESH_INTERVAL_MS, StreamsGroup
from groupcoord.coordinator.streams.groups_state import StreamsGroupsState
from groupcoord.coordinator.streams.member import MemberState, StreamsGroupMember
from groupcoord.coordinator.streams.membership import get_or_create_member
from groupcoord.coordinator.streams.reconcile import FencedMember, Reconciler
from groupcoord.coordinator.streams.target import RACK_AWARE_ASSIGNMENT_TAGS
from groupcoord.coordinator.streams.tasks import TasksTuple, TasksWithEpochs, tasks_of
from groupcoord.coordinator.streams.topology import StreamsTopology, record_value
from groupcoord.coordinator.streams.validate import JOIN_EPOCH
from groupcoord.coordinator.topics import group_hash, topic_hash
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import streams_group_heartbeat as wire


@dataclass(slots=True)
class HeartbeatResult:
    """`StreamsGroupHeartbeatResult`: the response and the internal topics to create."""

    response: wire.StreamsGroupHeartbeatResponse
    topics_to_create: dict[str, InternalTopic] = field(default_factory=dict)


def heartbeat(mgr: StreamsGroupsState, request: Any, version: int, client_id: str,
              client_host: str, fx: Effects) -> HeartbeatResult:
    group_id, member_id = request.group_id, request.member_id
    statuses: list[wire.Status] = []
    joining = request.member_epoch == JOIN_EPOCH
    group = _group_for_heartbeat(mgr, group_id, joining, request.instance_id, member_id)
    member, replaced = get_or_create_member(mgr, group, request, fx.records)
    updated = _updated_member(member, request, joining, client_id, client_host)
    recompute = _write_member(group, request.instance_id, member, updated, replaced, fx)

    topology = _maybe_update_topology(group, request.topology, fx.records)
    if topology.epoch > updated.topology_epoch:
        statuses.append(wire.Status(
            status_code=Status.STALE_TOPOLOGY,
            status_detail=f"The member's topology epoch {updated.topology_epoch} is behind "
                          f"the group's topology epoch {topology.epoch}."))
    configured, metadata_hash, changed = _configured(mgr, group, topology, fx.now_ms)
    recompute |= changed
    validated = _validated_epoch(configured, topology, request)
    _store_task_offsets(group, member_id, request)
    if validated != group.validated_topology_epoch:
        recompute = True
    settings = mgr.settings(group_id)
    configs = mgr.assignment_configs(group_id)
    if not recompute and configs != group.last_assignment_configs:
        recompute = True

    group_epoch = group.group_epoch
    if recompute:
        group_epoch = _bump_group_epoch(group, member, updated, changed, metadata_hash,
                                        validated, configs, fx)
    _arm_initial_delay(mgr, group, settings.initial_rebalance_delay_ms, fx)
    members, current_target = _members_view(group, updated, replaced)
    target_epoch, target = update_target(mgr, group, group_epoch, members, current_target,
                                         configured, topology, configs, fx, statuses)
    reconciled = _reconcile(mgr, group, updated, target_epoch,
                            target.get(member_id, TasksTuple()), request, fx)
    fx.schedule(timers.TIMERS.session_key(group_id, member_id), settings.session_timeout_ms)
    if request.shutdown_application and group.shutdown_requester is None:
        group.shutdown_requester = member_id
    if endpoints.endpoint_changed(member, reconciled) or (
            member.assigned != reconciled.assigned and reconciled.user_endpoint is not None):
        group.endpoint_epoch += 1
    response = _response(mgr, group, member, reconciled, joining, configured, statuses, request)
    if group.endpoint_epoch != request.endpoint_information_epoch:
        response.response.partitions_by_user_endpoint = endpoints.endpoint_to_partitions(
            group, reconciled, replaced, mgr.image)
    _missing_client_tags(configs, reconciled, version, statuses)
    return response


def _bump_group_epoch(group: StreamsGroup, member: StreamsGroupMember,
                      updated: StreamsGroupMember, hash_changed: bool, metadata_hash: int,
                      validated: int, configs: dict[str, str], fx: Effects) -> int:
    """The StreamsGroupMetadataValue of the next epoch; a new refresh deadline."""
    epoch = group.group_epoch + 1
    fx.records.append(rec.group_metadata(group.group_id, epoch, metadata_hash, validated,
                                         configs, group.stored_description_epoch,
                                         group.failed_description_epoch))
    fx.event(group.group_id, "group_epoch_bumped", epoch, member_id=updated.member_id,
             reason=_bump_reason(member, updated, hash_changed, validated, group),
             protocol="streams")
    group.refresh_deadline_ms = fx.now_ms + METADATA_REFRESH_INTERVAL_MS
    group.refresh_epoch = epoch
    return epoch


def _group_for_heartbeat(mgr: StreamsGroupsState, group_id: str, joining: bool,
                         instance_id: str | None, member_id: str) -> StreamsGroup:
    """`getOrCreateStreamsGroup` (not stored until its records replay) and
    `throwIfStreamsGroupIsFull`."""
    group = mgr.groups.get(group_id)
    if group is None:
        if not joining:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Streams group {group_id} not found.")
        group = StreamsGroup(group_id)
    if joining and group.static_member(instance_id) is None \
            and len(group.members) >= mgr.config.group_streams_max_size \
            and member_id not in group.members:
        raise HeartbeatError(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            "The streams group has reached its maximum capacity of "
            f"{mgr.config.group_streams_max_size} members.")
    return group


def _arm_initial_delay(mgr: StreamsGroupsState, group: StreamsGroup, delay_ms: int,
                       fx: Effects) -> None:
    """The first join of an empty group waits for more members (`scheduleIfAbsent`)."""
    if not group.members and delay_ms > 0 and group.group_id not in mgr.initial_delays:
        mgr.initial_delays.add(group.group_id)
        fx.schedule(timers.initial_delay_key(group.group_id), delay_ms)


def _members_view(group: StreamsGroup, updated: StreamsGroupMember,
                  replaced: StreamsGroupMember | None
                  ) -> tuple[dict[str, StreamsGroupMember], dict[str, TasksTuple]]:
    """The members and targets with this heartbeat's member in (records not replayed yet);
    a replaced static member's target is relabelled to its successor."""
    members = dict(group.members)
    current_target = dict(group.target)
    if replaced is not None:
        members.pop(replaced.member_id, None)
        if replaced.member_id in current_target:
            current_target[updated.member_id] = current_target.pop(replaced.member_id)
    members[updated.member_id] = updated
    return members, current_target


def _missing_client_tags(configs: dict[str, str], member: StreamsGroupMember, version: int,
                         statuses: list[wire.Status]) -> None:
    """MISSING_CLIENT_TAGS (code 6), only from v1: v0 clients fail on unknown codes."""
    wanted = configs.get(RACK_AWARE_ASSIGNMENT_TAGS, "").strip()
    if version < 1 or not wanted:
        return
    have = {k for k, _ in member.client_tags}
    missing = [t for t in re.split(r"\s*,\s*", wanted) if t not in have]
    if missing:
        statuses.append(wire.Status(
            status_code=Status.MISSING_CLIENT_TAGS,
            status_detail="Missing required client tags for rack-aware standby assignment: "
                          f"[{', '.join(missing)}]. Configure them via 'client.tag.<tagKey>' "
                          "in your Streams config."))


def _updated_member(member: StreamsGroupMember, request: Any, joining: bool, client_id: str,
                    client_host: str) -> StreamsGroupMember:
    """`StreamsGroupMember.Builder.maybeUpdate*`: null (or -1) keeps the old value."""
    changes: dict[str, Any] = {"client_id": client_id, "client_host": client_host}
    if request.instance_id is not None:
        changes["instance_id"] = request.instance_id
    if request.rack_id is not None:
        changes["rack_id"] = request.rack_id
    if request.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = request.rebalance_timeout_ms
    if request.topology is not None:
        changes["topology_epoch"] = request.topology.epoch
    if request.process_id is not None:
        changes["process_id"] = request.process_id
    if request.client_tags is not None:
        changes["client_tags"] = tuple(sorted({kv.key: kv.value
                                               for kv in request.client_tags}.items()))
    endpoint = request.user_endpoint
    if joining or endpoint is not None:
        changes["user_endpoint"] = None if endpoint is None else (endpoint.host, endpoint.port)
    return replace(member, **changes)


def _write_member(group: StreamsGroup, instance_id: str | None, member: StreamsGroupMember,
                  updated: StreamsGroupMember, replaced: StreamsGroupMember | None,
                  fx: Effects) -> bool:
    """`hasStreamsMemberMetadataChanged`: a static member's rejoin bumps the epoch only
    for topology epoch, rack, client tags or process id. A replacing static member was
    already written by the replacement; only a change on top of it is."""
    new = updated.member_id not in group.members and replaced is None
    if not new and not member.metadata_differs(updated):
        return False
    fx.records.append(rec.member_metadata(group.group_id, updated))
    if new:
        fx.event(group.group_id, "member_joined", group.group_epoch, member_id=updated.member_id,
                 reason="not provided", instance_id=updated.instance_id,
                 client_id=updated.client_id, client_host=updated.client_host,
                 process_id=updated.process_id)
    if instance_id is None:
        return True
    return member.epoch_relevant_config_differs(updated)


def _maybe_update_topology(group: StreamsGroup, topology: Any, records: list[Any]
                           ) -> StreamsTopology:
    if topology is not None:
        requested = StreamsTopology.from_request(topology)
        if group.topology is None:
            records.append(rec.topology(group.group_id, record_value(topology)))
            return requested
        if group.topology.epoch > topology.epoch:
            return group.topology
        if group.topology != requested:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST,
                                 "Topology updates are not supported yet.")
        return group.topology
    if group.topology is None:
        raise HeartbeatError(ErrorCode.UNKNOWN_SERVER_ERROR,
                             "The topology is null and the group topology is also null.")
    return group.topology


def metadata_hash(mgr: StreamsGroupsState, topology: StreamsTopology) -> int:
    """`StreamsGroup.computeMetadataHash` over the required topics that exist."""
    image = mgr.image
    return group_hash({t: topic_hash(image, t) for t in topology.required_topics()
                       if t in image.by_name})


def _configured(mgr: StreamsGroupsState, group: StreamsGroup, topology: StreamsTopology,
                now_ms: int) -> tuple[ConfiguredTopology, int, bool]:
    """Step 3: (configured topology, metadata hash, whether the hash changed)."""
    reconfigure = group.topology is None
    hashed = group.metadata_hash
    changed = False
    if reconfigure or group.configured is None or group.has_metadata_expired(now_ms):
        hashed = metadata_hash(mgr, topology)
        if hashed != group.metadata_hash:
            changed = reconfigure = True
        if reconfigure or group.configured is None:
            try:
                group.configured = configure_topics(topology, mgr.image, hashed)
            except InvalidTopology as exc:
                raise HeartbeatError(ErrorCode.STREAMS_INVALID_TOPOLOGY, str(exc)) from exc
            except IllegalTopologyState as exc:
                raise HeartbeatError(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)) from exc
    assert group.configured is not None
    return group.configured, hashed, changed


def _validated_epoch(configured: ConfiguredTopology, topology: StreamsTopology,
                     request: Any) -> int:
    """Step 3b: the topology epoch once it is ready (-1 before), checking that the tasks
    the member reports exist (`throwIfRequestContainsInvalidTasks`)."""
    if not configured.is_ready():
        return -1
    for tasks in (request.active_tasks, request.standby_tasks, request.warmup_tasks):
        _throw_if_invalid_tasks(configured, tasks)
    return topology.epoch


def _throw_if_invalid_tasks(configured: ConfiguredTopology, tasks: list[Any] | None) -> None:
    assert configured.subtopologies is not None
    for t in tasks or []:
        sub = configured.subtopologies.get(t.subtopology_id)
        if sub is None:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST,
                                 f"Subtopology {t.subtopology_id} does not exist in the "
                                 "topology.")
        for p in t.partitions:
            if p < 0 or p >= sub.number_of_tasks:
                raise HeartbeatError(
                    ErrorCode.INVALID_REQUEST,
                    f"Task {p} for subtopology {t.subtopology_id} is invalid. Number of tasks "
                    f"for this subtopology: {sub.number_of_tasks}")


def _store_task_offsets(group: StreamsGroup, member_id: str, request: Any) -> None:
    """Transient telemetry for the assignor; null keeps the last report."""
    if request.task_offsets is not None:
        group.task_offsets[member_id] = {(t.subtopology_id, t.partition): t.offset
                                         for t in request.task_offsets}
    if request.task_end_offsets is not None:
        group.task_end_offsets[member_id] = {(t.subtopology_id, t.partition): t.offset
                                             for t in request.task_end_offsets}


def _bump_reason(member: StreamsGroupMember, updated: StreamsGroupMember, hash_changed: bool,
                 validated: int, group: StreamsGroup) -> str:
    if member.member_id not in group.members:
        return "member joined"
    if member.metadata_differs(updated):
        return "member metadata changed"
    if hash_changed:
        return "topic metadata changed"
    if validated != group.validated_topology_epoch:
        return "topology validated"
    return "assignment configs changed"


def update_target(mgr: StreamsGroupsState, group: StreamsGroup, group_epoch: int,
                  members: dict[str, StreamsGroupMember], current_target: dict[str, TasksTuple],
                  configured: ConfiguredTopology, topology: StreamsTopology | None,
                  configs: dict[str, str], fx: Effects, statuses: list[wire.Status] | None
                  ) -> tuple[int, dict[str, TasksTuple]]:
    """Step 4: (target epoch, target assignment)."""
    if group.group_id in mgr.initial_delays:
        if statuses is not None:
            statuses.append(wire.Status(
                status_code=Status.ASSIGNMENT_DELAYED,
                status_detail="Assignment delayed due to the configured initial rebalance "
                              "delay."))
        return group.assignment_epoch, {}
    if group.assignment_epoch >= group_epoch:
        return group.assignment_epoch, current_target
    interval = mgr.settings(group.group_id).assignment_interval_ms
    if group.assignment_timestamp != 0 and interval != 0 \
            and fx.now_ms < group.assignment_timestamp + interval:
        # `canComputeNextTargetAssignment`: the next heartbeat after the interval computes.
        if statuses is not None:
            statuses.append(wire.Status(
                status_code=Status.ASSIGNMENT_DELAYED,
                status_detail="Assignment delayed due to the configured assignment interval."))
        return group.assignment_epoch, current_target
    target = target_assignment.compute(group, group_epoch, members, current_target, configured,
                                       topology, configs, fx.now_ms, fx.records)
    fx.event(group.group_id, "target_assignment_computed", group_epoch,
             members=len(members), tasks=sum(len(t.active) for t in target.values()))
    return group_epoch, target


def owned_tasks(request: Any) -> TasksWithEpochs | None:
    """`TasksTuple.fromHeartbeatRequest`: unknown unless all three lists were sent."""
    if request.active_tasks is None or request.standby_tasks is None \
            or request.warmup_tasks is None:
        return None
    active = tasks_of((t.subtopology_id, t.partitions) for t in request.active_tasks)
    return TasksWithEpochs({s: dict.fromkeys(p, 0) for s, p in active.items()},
                           tasks_of((t.subtopology_id, t.partitions) for t in request.standby_tasks),
                           tasks_of((t.subtopology_id, t.partitions) for t in request.warmup_tasks))


def _reconcile(mgr: StreamsGroupsState, group: StreamsGroup, member: StreamsGroupMember,
               target_epoch: int, target: TasksTuple, request: Any, fx: Effects
               ) -> StreamsGroupMember:
    """Step 5 (`maybeReconcile`)."""
    if member.is_reconciled_to(target_epoch):
        return member
    try:
        updated = Reconciler(member, target_epoch, target, group.current_active_process,
                             group.current_standby_processes, group.current_warmup_processes,
                             owned_tasks(request)).build()
    except FencedMember as exc:
        raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, str(exc)) from exc
    if updated != member:
        fx.records.append(rec.current_assignment(group.group_id, updated))
        key = timers.TIMERS.rebalance_key(group.group_id, updated.member_id)
        if updated.state == MemberState.UNREVOKED_TASKS:
            fx.schedule(key, max(0, updated.rebalance_timeout_ms))
            mgr.rebalance_epochs[(group.group_id, updated.member_id)] = updated.member_epoch
        else:
            mgr.rebalance_epochs.pop((group.group_id, updated.member_id), None)
            fx.cancel(key)
    return updated


def _task_ids(tasks: dict[str, Any]) -> list[wire.TaskIds]:
    return [wire.TaskIds(subtopology_id=s, partitions=sorted(p))
            for s, p in sorted(tasks.items())]


def _response(mgr: StreamsGroupsState, group: StreamsGroup, before: StreamsGroupMember,
              member: StreamsGroupMember, joining: bool, configured: ConfiguredTopology,
              statuses: list[wire.Status], request: Any) -> HeartbeatResult:
    settings = mgr.settings(group.group_id)
    response = wire.StreamsGroupHeartbeatResponse(
        member_id=member.member_id, member_epoch=member.member_epoch,
        heartbeat_interval_ms=settings.heartbeat_interval_ms,
        task_offset_interval_ms=settings.task_offset_interval_ms,
        acceptable_recovery_lag=settings.acceptable_recovery_lag)
    if joining or before.assigned != member.assigned:
        response.active_tasks = _task_ids(member.assigned.active)
        response.standby_tasks = _task_ids(member.assigned.standby)
        response.warmup_tasks = _task_ids(member.assigned.warmup)
    if group.group_id in mgr.groups:
        response.endpoint_information_epoch = group.endpoint_epoch
    to_create: dict[str, InternalTopic] = {}
    if configured.error is not None:
        to_create = dict(configured.to_create)
        statuses.append(wire.Status(status_code=configured.error.status,
                                    status_detail=configured.error.message))
    if group.shutdown_requester is not None:
        statuses.append(wire.Status(
            status_code=Status.SHUTDOWN_APPLICATION,
            status_detail=f"Streams group member {group.shutdown_requester} encountered a "
                          "fatal error and requested a shutdown for the entire application."))
    response.status = statuses
    return HeartbeatResult(response, to_create)
