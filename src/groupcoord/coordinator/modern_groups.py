"""What every modern group kind (consumer, share and streams groups) has alike: members'
stored reconciliation states, member timers, ListGroups entries and whether DeleteGroups
may delete a group.

In each kind the group state is derived, and it is Empty exactly when the group has no
members (`ConsumerGroup`, `ShareGroup`, `StreamsGroup.state`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Protocol, Self

from groupcoord.coordinator.classic.effects import Effects
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.list_groups import ListedGroup

UNKNOWN_MEMBER_STATE = 127


class StoredMemberState(IntEnum):
    """A member's reconciliation state as its current-assignment record stores it (int8);
    each kind names its own states, and any byte Kafka does not know reads as UNKNOWN
    (`MemberState.fromValue`)."""

    @classmethod
    def of(cls, value: int) -> Self:
        try:
            return cls(value)
        except ValueError:
            return cls(UNKNOWN_MEMBER_STATE)


@dataclass(frozen=True, slots=True)
class MemberTimers:
    """A kind's two member timers, keyed (kind, group id, member id): the session timer,
    renewed by every heartbeat, and the rebalance timer, armed while the member revokes
    at the member epoch its manager keeps in `rebalance_epochs`."""

    session: str
    rebalance: str

    def session_key(self, group_id: str, member_id: str) -> tuple[str, str, str]:
        return (self.session, group_id, member_id)

    def rebalance_key(self, group_id: str, member_id: str) -> tuple[str, str, str]:
        return (self.rebalance, group_id, member_id)

    def cancel(self, group_id: str, member_id: str, fx: Effects,
               rebalance_epochs: dict[tuple[str, str], int] | None) -> None:
        """A removed member's timers, and the epoch its rebalance timer was armed at."""
        fx.cancel(self.session_key(group_id, member_id))
        fx.cancel(self.rebalance_key(group_id, member_id))
        if rebalance_epochs is not None:
            rebalance_epochs.pop((group_id, member_id), None)


class ModernGroup(Protocol):
    """What listing and deletion read of a consumer, share or streams group."""

    @property
    def members(self) -> Mapping[str, object]: ...

    def state(self) -> Enum: ...


def list_groups(groups: Mapping[str, ModernGroup], states: set[str], types: set[str],
                group_type: str, protocol_type: str) -> list[ListedGroup]:
    """`states` and `types` lower-case; empty sets match every group."""
    if types and group_type not in types:
        return []
    out = []
    for group_id, group in sorted(groups.items()):
        state = group.state().value
        if states and state.lower() not in states:
            continue
        out.append(ListedGroup(group_id=group_id, protocol_type=protocol_type,
                               group_state=state, group_type=group_type))
    return out


def validate_delete(group: ModernGroup) -> int:
    """`validateDeleteGroup`: only an Empty group may be deleted."""
    return ErrorCode.NON_EMPTY_GROUP if group.members else ErrorCode.NONE
