"""StreamsGroupHeartbeat checks made before the group is touched
(`GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid`,
`throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures`, `throwIfInvalidTopology`).
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.consumer.errors import HeartbeatError, is_blank
from groupcoord.wire.errors import ErrorCode

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


def _invalid(message: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.INVALID_REQUEST, message)


def validate(request: Any) -> None:
    topology = request.topology
    if topology is not None:
        for s in topology.subtopologies:
            if s.source_topic_regex:
                raise _invalid("Regular expressions for source topics are not supported yet.")
    if is_blank(request.member_id):
        raise _invalid("MemberId can't be empty.")
    if is_blank(request.group_id):
        raise _invalid("GroupId can't be empty.")
    if request.instance_id is not None and is_blank(request.instance_id):
        raise _invalid("InstanceId can't be empty.")
    if request.rack_id is not None and is_blank(request.rack_id):
        raise _invalid("RackId can't be empty.")
    epoch = request.member_epoch
    if epoch == JOIN_EPOCH:
        _validate_join(request)
    elif epoch == STATIC_LEAVE_EPOCH:
        if request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        raise _invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    tasks = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    if any(t is not None for t in tasks) and any(t is None for t in tasks):
        raise _invalid("If one task-type is non-null, all must be non-null.")
    if epoch != JOIN_EPOCH and topology is not None:
        raise _invalid("Topology can only be provided when (re-)joining.")


def _validate_join(request: Any) -> None:
    if request.rebalance_timeout_ms == -1:
        raise _invalid("RebalanceTimeoutMs must be provided in first request.")
    for name, tasks in (("ActiveTasks", request.active_tasks),
                        ("StandbyTasks", request.standby_tasks),
                        ("WarmupTasks", request.warmup_tasks)):
        if tasks is None or tasks:
            raise _invalid(f"{name} must be empty when (re-)joining.")
    if request.topology is None:
        raise _invalid("Topology must be non-null when (re-)joining.")
    for s in request.topology.subtopologies:
        for info in s.state_changelog_topics:
            if info.partitions != 0:
                raise HeartbeatError(
                    ErrorCode.STREAMS_INVALID_TOPOLOGY,
                    f"Changelog topic {info.name} must have an undefined partition count, "
                    f"but it is set to {info.partitions}.")
