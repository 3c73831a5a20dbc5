"""Classic Heartbeat (`GroupMetadataManager.classicGroupHeartbeatToClassicGroup`).

A heartbeat renews the member's session timer. CompletingRebalance answers NONE: the
`ClassicGroupState` Javadoc says REBALANCE_IN_PROGRESS but Kafka's code returns NONE.
"""

from __future__ import annotations

from groupcoord.coordinator.classic import rebalance
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.join import validate_existing_member
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.wire.errors import ErrorCode

S = ClassicGroupState


def heartbeat(group: ClassicGroup, member_id: str, instance_id: str | None,
              generation_id: int, fx: Effects) -> int:
    """Returns the error code of the HeartbeatResponse."""
    if group.is_in(S.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    error = validate_existing_member(group, member_id, instance_id)
    if error != ErrorCode.NONE:
        return error
    if generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if group.is_in(S.EMPTY):
        return ErrorCode.UNKNOWN_MEMBER_ID
    rebalance.schedule_heartbeat(fx, group, group.members[member_id])
    if group.is_in(S.PREPARING_REBALANCE):
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE
