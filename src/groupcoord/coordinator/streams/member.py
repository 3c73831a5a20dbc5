"""A streams group member (`StreamsGroupMember`) and its reconciliation states
(`streams.MemberState`: STABLE 1, UNREVOKED_TASKS 2, UNRELEASED_TASKS 3, UNKNOWN 127).

Members are immutable values: a heartbeat builds a changed copy and the records it writes
carry every field, so replaying the records rebuilds the same member.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from groupcoord.coordinator.modern_groups import UNKNOWN_MEMBER_STATE, StoredMemberState
from groupcoord.coordinator.streams.tasks import NO_TASKS, TasksWithEpochs


class MemberState(StoredMemberState):
    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = UNKNOWN_MEMBER_STATE


@dataclass(frozen=True, slots=True)
class StreamsGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    assigned: TasksWithEpochs = field(default=NO_TASKS)
    pending_revocation: TasksWithEpochs = field(default=NO_TASKS)

    def is_reconciled_to(self, target_epoch: int) -> bool:
        """`StreamsGroupMember.isReconciledTo`."""
        return self.state == MemberState.STABLE and self.member_epoch == target_epoch

    def with_epoch(self, epoch: int) -> StreamsGroupMember:
        """`Builder.updateMemberEpoch`: the old epoch becomes the previous one."""
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch)

    def metadata_differs(self, other: StreamsGroupMember) -> bool:
        """Whether the fields of StreamsGroupMemberMetadataValue differ."""
        return _metadata(self) != _metadata(other)

    def epoch_relevant_config_differs(self, other: StreamsGroupMember) -> bool:
        """`hasEpochRelevantMemberConfigChanged`: what a static member's rejoin may change
        without bumping the group epoch is everything but these."""
        return (self.topology_epoch, self.rack_id, self.client_tags, self.process_id) != \
            (other.topology_epoch, other.rack_id, other.client_tags, other.process_id)


def _metadata(m: StreamsGroupMember) -> tuple[object, ...]:
    return (m.instance_id, m.rack_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.topology_epoch, m.process_id, m.user_endpoint, m.client_tags)
