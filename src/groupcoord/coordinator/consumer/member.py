"""One member of a consumer group (`ConsumerGroupMember`, `ModernGroupMember`).

Members are immutable values: an operation builds the updated member with
`dataclasses.replace`, turns the difference into records, and replay installs the new
value. Assignments map topic id -> partition -> assignment epoch (the epoch at which the
member received the partition, KIP-1251), which commits from older epochs are checked
against.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from groupcoord.coordinator.consumer.state import MemberState

# topic id -> partition -> assignment epoch
EpochAssignment = dict[bytes, dict[int, int]]
# topic id -> partitions (targets carry no epochs)
Assignment = Mapping[bytes, frozenset[int]]
EMPTY: dict[bytes, dict[int, int]] = {}


@dataclass(frozen=True, slots=True)
class ClassicMeta:
    """How a classic-protocol member inside a consumer group joined (JoinGroup data)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic: ClassicMeta | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: EpochAssignment = field(default_factory=dict)
    pending_revocation: EpochAssignment = field(default_factory=dict)

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def metadata_key(self) -> tuple:
        """The fields stored in ConsumerGroupMemberMetadataValue."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                self.subscribed_topic_names, self.subscribed_topic_regex,
                self.rebalance_timeout_ms, self.server_assignor, self.classic)

    def assignment_key(self) -> tuple:
        """The fields stored in ConsumerGroupCurrentMemberAssignmentValue."""
        return (self.member_epoch, self.previous_member_epoch, self.state,
                self.assigned, self.pending_revocation)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch

    def assigned_sets(self) -> dict[bytes, frozenset[int]]:
        return {t: frozenset(ps) for t, ps in self.assigned.items() if ps}

    def owns(self, topic_id: bytes, partition: int) -> bool:
        return partition in self.assigned.get(topic_id, EMPTY) or \
            partition in self.pending_revocation.get(topic_id, EMPTY)


def partition_count(assignment: Mapping[bytes, Mapping[int, int] | frozenset[int]]) -> int:
    return sum(len(ps) for ps in assignment.values())


def same_partitions(a: Mapping[bytes, Mapping[int, int]], b: Mapping[bytes, Mapping[int, int]]
                    ) -> bool:
    """Equal as topic -> partition sets, ignoring assignment epochs and empty topics."""
    ka = {t for t, ps in a.items() if ps}
    kb = {t for t, ps in b.items() if ps}
    return ka == kb and all(a[t].keys() == b[t].keys() for t in ka)
