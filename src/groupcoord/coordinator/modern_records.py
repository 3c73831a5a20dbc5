"""The record layout every modern group kind (KIP-848 consumer, KIP-932 share, KIP-1071
streams groups) writes under keys of its own: group metadata, member metadata, target
assignment member and metadata, current member assignment.

Their tombstones, the target assignment metadata, a member's removal and a group's
deletion are built the same way for each kind (`GroupCoordinatorRecordHelpers`,
`StreamsCoordinatorRecordHelpers`); the values that differ stay in each kind's `records`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from groupcoord.logformat.coordinator_records import CoordinatorRecord
from groupcoord.wire.messages import WireStruct

Key = TypeVar("Key")


def sorted_partitions(assignment: Mapping[Key, Iterable[int]]) -> list[tuple[Key, list[int]]]:
    """An assignment as records list it: (topic id or subtopology, partitions), both
    ascending, empty entries left out."""
    return [(key, sorted(parts)) for key, parts in sorted(assignment.items()) if parts]


def sorted_partitions_with_epochs(assignment: Mapping[Key, Mapping[int, int]]
                                  ) -> list[tuple[Key, list[int], list[int]]]:
    """`sorted_partitions` with each partition's assignment epoch beside it (KIP-1251)."""
    return [(key, parts, [assignment[key][p] for p in parts])
            for key, parts in sorted_partitions(assignment)]


class GroupKey(Protocol):
    """A generated key class keyed by group id."""

    def __call__(self, *, group_id: str) -> WireStruct: ...


class MemberKey(Protocol):
    """A generated key class keyed by group id and member id."""

    def __call__(self, *, group_id: str, member_id: str) -> WireStruct: ...


class TargetMetadataValue(Protocol):
    def __call__(self, *, assignment_epoch: int, assignment_timestamp: int) -> WireStruct: ...


@dataclass(frozen=True, slots=True)
class ModernGroupRecords:
    """One group kind's key classes, and the records built from them alone."""

    group_metadata_key: GroupKey
    member_metadata_key: MemberKey
    target_member_key: MemberKey
    target_metadata_key: GroupKey
    target_metadata_value: TargetMetadataValue
    current_assignment_key: MemberKey

    def group_metadata_tombstone(self, group_id: str) -> CoordinatorRecord:
        return CoordinatorRecord(self.group_metadata_key(group_id=group_id), None, None)

    def member_metadata_tombstone(self, group_id: str, member_id: str) -> CoordinatorRecord:
        key = self.member_metadata_key(group_id=group_id, member_id=member_id)
        return CoordinatorRecord(key, None, None)

    def target_member_tombstone(self, group_id: str, member_id: str) -> CoordinatorRecord:
        key = self.target_member_key(group_id=group_id, member_id=member_id)
        return CoordinatorRecord(key, None, None)

    def target_metadata(self, group_id: str, epoch: int, timestamp_ms: int
                        ) -> CoordinatorRecord:
        value = self.target_metadata_value(assignment_epoch=epoch,
                                           assignment_timestamp=timestamp_ms)
        return CoordinatorRecord(self.target_metadata_key(group_id=group_id), value, 0)

    def target_metadata_tombstone(self, group_id: str) -> CoordinatorRecord:
        return CoordinatorRecord(self.target_metadata_key(group_id=group_id), None, None)

    def current_assignment_tombstone(self, group_id: str, member_id: str
                                     ) -> CoordinatorRecord:
        key = self.current_assignment_key(group_id=group_id, member_id=member_id)
        return CoordinatorRecord(key, None, None)

    def member_removal(self, group_id: str, member_id: str) -> list[CoordinatorRecord]:
        """The three tombstones of a removed member, in Kafka's order (`removeMember`):
        current assignment, target, then metadata."""
        return [self.current_assignment_tombstone(group_id, member_id),
                self.target_member_tombstone(group_id, member_id),
                self.member_metadata_tombstone(group_id, member_id)]

    def group_tombstones(self, group_id: str, members: Sequence[str], targets: Sequence[str],
                         before_group: Iterable[CoordinatorRecord] = ()
                         ) -> list[CoordinatorRecord]:
        """A deleted group's tombstones in Kafka's order (`createGroupTombstoneRecords`):
        current assignments, targets, target metadata, member metadata, the kind's own
        records (`before_group`), then the group metadata."""
        out = [self.current_assignment_tombstone(group_id, m) for m in members]
        out.extend(self.target_member_tombstone(group_id, m) for m in targets)
        out.append(self.target_metadata_tombstone(group_id))
        out.extend(self.member_metadata_tombstone(group_id, m) for m in members)
        out.extend(before_group)
        out.append(self.group_metadata_tombstone(group_id))
        return out
