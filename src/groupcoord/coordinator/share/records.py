"""Builders for the share-group records of `__consumer_offsets` (types 10-15).

Mirrors Kafka's `GroupCoordinatorRecordHelpers.newShareGroup*Record` and the tombstone
helpers. Every value is written at version 0; a `None` value is a tombstone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupcoord.coordinator.modern_records import ModernGroupRecords, sorted_partitions
from groupcoord.logformat.coordinator_records import CoordinatorRecord
from groupcoord.logformat.generated.share_group_current_member_assignment import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
)
from groupcoord.logformat.generated.share_group_current_member_assignment import (
    TopicPartitions as CurrentTopicPartitions,
)
from groupcoord.logformat.generated.share_group_member_metadata import (
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
)
from groupcoord.logformat.generated.share_group_metadata import (
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
)
from groupcoord.logformat.generated.share_group_target_assignment_member import (
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
)
from groupcoord.logformat.generated.share_group_target_assignment_member import (
    TopicPartition as TargetTopicPartition,
)
from groupcoord.logformat.generated.share_group_target_assignment_metadata import (
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
)

MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_METADATA = 12
TARGET_MEMBER = 13
CURRENT_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15
RECORD_TYPES = frozenset(range(10, 16))

Assignment = Mapping[bytes, Iterable[int]]


# The records built from the keys alone (tombstones, target metadata, removals);
# those called by name elsewhere are named here too.
RECORDS = ModernGroupRecords(
    ShareGroupMetadataKey, ShareGroupMemberMetadataKey, ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMetadataKey, ShareGroupTargetAssignmentMetadataValue,
    ShareGroupCurrentMemberAssignmentKey)
target_metadata = RECORDS.target_metadata
member_removal = RECORDS.member_removal


def member_metadata(group_id: str, member_id: str, rack_id: str | None, client_id: str,
                    client_host: str, topics: Iterable[str]) -> CoordinatorRecord:
    return CoordinatorRecord(
        ShareGroupMemberMetadataKey(group_id=group_id, member_id=member_id),
        ShareGroupMemberMetadataValue(rack_id=rack_id, client_id=client_id,
                                      client_host=client_host,
                                      subscribed_topic_names=sorted(topics)), 0)


def group_metadata(group_id: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupMetadataKey(group_id=group_id),
                             ShareGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash), 0)


def target_member(group_id: str, member_id: str, assignment: Assignment) -> CoordinatorRecord:
    return CoordinatorRecord(
        ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
        ShareGroupTargetAssignmentMemberValue(topic_partitions=[
            TargetTopicPartition(topic_id=t, partitions=ps)
            for t, ps in sorted_partitions(assignment)]), 0)


def current_assignment(group_id: str, member_id: str, epoch: int, previous_epoch: int,
                       assignment: Assignment) -> CoordinatorRecord:
    return CoordinatorRecord(
        ShareGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id),
        ShareGroupCurrentMemberAssignmentValue(
            member_epoch=epoch, previous_member_epoch=previous_epoch, state=0,
            assigned_partitions=[CurrentTopicPartitions(topic_id=t, partitions=ps)
                                 for t, ps in sorted_partitions(assignment)]), 0)

