"""Classic group states and their one transition table (`ClassicGroupState`).

Kafka's valid previous states: Empty <- PreparingRebalance; PreparingRebalance <- Stable,
CompletingRebalance, Empty; CompletingRebalance <- PreparingRebalance; Stable <-
CompletingRebalance; Dead <- any. Anything else is a bug and raises.
"""

from __future__ import annotations

from enum import Enum


class ClassicGroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def wire_name(self) -> str:
        return self.value

    @property
    def lower_name(self) -> str:
        return self.value.lower()


S = ClassicGroupState

# target state -> states it may be entered from
VALID_PREVIOUS: dict[ClassicGroupState, frozenset[ClassicGroupState]] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset(S),
}

# States from which a (re)balance may start (`ClassicGroup.canRebalance`).
CAN_REBALANCE = frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY})


class IllegalStateTransition(RuntimeError):
    """A transition the table forbids: a coordinator bug, fail-stop material."""


def check_transition(current: ClassicGroupState, target: ClassicGroupState) -> None:
    if current not in VALID_PREVIOUS[target]:
        raise IllegalStateTransition(f"{current.value} -> {target.value} is not allowed")
