"""The vocabulary of share-partition delivery state (KIP-932, KIP-1191): record states,
the one transition table, ack types, a record's in-flight state and the persisted
StateBatch.

Mirrors Kafka's `RecordState`, `AcknowledgeType` and `InFlightState`
(server/src/main/java/org/apache/kafka/server/share/fetch/). ARCHIVING is the DLQ's
non-terminal state: a record on its way to the group's dead-letter topic, persisted in
`__share_group_state` like any other state so that a restart resumes its DLQ write.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum


class RecordState(IntEnum):
    """Kafka's `RecordState` ids."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3  # KIP-1191: being written to the dead-letter topic
    ARCHIVED = 4


TERMINAL = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})

# The one transition table (Kafka `RecordState.validateTransition`).
TRANSITIONS: dict[RecordState, frozenset[RecordState]] = {
    RecordState.AVAILABLE: frozenset({RecordState.ACQUIRED, RecordState.ARCHIVED}),
    RecordState.ACQUIRED: frozenset({RecordState.AVAILABLE, RecordState.ACKNOWLEDGED,
                                     RecordState.ARCHIVING, RecordState.ARCHIVED}),
    # Only the DLQ write's completion ends ARCHIVING (`SharePartition.initiateDLQAndArchive`).
    RecordState.ARCHIVING: frozenset({RecordState.ARCHIVED}),
    RecordState.ACKNOWLEDGED: frozenset(),
    RecordState.ARCHIVED: frozenset(),
}


class AckType(IntEnum):
    """`AcknowledgeTypes` values of ShareFetch/ShareAcknowledge."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class InvalidTransition(Exception):
    """A transition the table forbids: a bug in the caller, never client input."""


def check_transition(offset: int, old: RecordState, new: RecordState) -> None:
    if new not in TRANSITIONS[old]:
        raise InvalidTransition(f"{offset}: {old.name} -> {new.name}")


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A run of offsets with one durable state (ShareSnapshot/ShareUpdate StateBatches)."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


class InFlight:
    """One record's `InFlightState`; owner and deadline only while ACQUIRED."""

    __slots__ = ("deadline_ms", "delivery_count", "member_id", "state")

    def __init__(self, state: RecordState = RecordState.AVAILABLE, delivery_count: int = 0,
                 member_id: str = "", deadline_ms: int = 0) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.deadline_ms = deadline_ms


def runs(items: Iterable[tuple[int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Merge sorted (offset, a, b) triples into (first, last, a, b) runs."""
    out: list[list[int]] = []
    for offset, a, b in items:
        if out and out[-1][1] == offset - 1 and out[-1][2] == a and out[-1][3] == b:
            out[-1][1] = offset
        else:
            out.append([offset, offset, a, b])
    return [(r[0], r[1], r[2], r[3]) for r in out]
