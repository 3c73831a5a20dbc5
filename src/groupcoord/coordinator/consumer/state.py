"""Member reconciliation states and group states (`MemberState`, `ConsumerGroupState`).

A member's state changes only through `transition`, which checks the one table below.
The group state is derived from epochs and member states (`ConsumerGroup.
maybeUpdateGroupState`), so it has no transitions of its own.
"""

from __future__ import annotations

from enum import Enum

from groupcoord.coordinator.modern_groups import UNKNOWN_MEMBER_STATE, StoredMemberState


class MemberState(StoredMemberState):
    """Stored as an int8 in ConsumerGroupCurrentMemberAssignmentValue.State."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = UNKNOWN_MEMBER_STATE


M = MemberState

# UNKNOWN is only ever read from a record; nothing moves a member into it.
_TRANSITIONS: dict[MemberState, frozenset[MemberState]] = {
    M.STABLE: frozenset({M.STABLE, M.UNREVOKED_PARTITIONS, M.UNRELEASED_PARTITIONS}),
    M.UNREVOKED_PARTITIONS: frozenset({M.STABLE, M.UNREVOKED_PARTITIONS,
                                       M.UNRELEASED_PARTITIONS}),
    M.UNRELEASED_PARTITIONS: frozenset({M.STABLE, M.UNREVOKED_PARTITIONS,
                                        M.UNRELEASED_PARTITIONS}),
    M.UNKNOWN: frozenset({M.STABLE, M.UNREVOKED_PARTITIONS, M.UNRELEASED_PARTITIONS}),
}


def transition(current: MemberState, target: MemberState) -> MemberState:
    if target not in _TRANSITIONS[current]:
        raise ValueError(f"illegal member state transition {current.name} -> {target.name}")
    return target


class ConsumerGroupState(str, Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"
