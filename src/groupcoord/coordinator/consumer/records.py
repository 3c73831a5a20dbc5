"""Builders for the consumer-group records of `__consumer_offsets` (types 3, 5-8, 16),
mirroring `GroupCoordinatorRecordHelpers`. Every value is written at version 0; a
`None` value is a tombstone. Records carry sorted partition lists so a live operation and
a replay of the stored bytes see identical state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.modern_records import (
    ModernGroupRecords,
    sorted_partitions,
    sorted_partitions_with_epochs,
)
from groupcoord.logformat.coordinator_records import CoordinatorRecord
from groupcoord.logformat.generated import consumer_group_current_member_assignment as cur
from groupcoord.logformat.generated import consumer_group_member_metadata as meta
from groupcoord.logformat.generated import consumer_group_metadata as gmeta
from groupcoord.logformat.generated import consumer_group_regular_expression as rx
from groupcoord.logformat.generated import consumer_group_target_assignment_member as tmem
from groupcoord.logformat.generated import consumer_group_target_assignment_metadata as tmeta

# The records built from the keys alone (tombstones, target metadata, removals);
# those called by name elsewhere are named here too.
RECORDS = ModernGroupRecords(
    gmeta.ConsumerGroupMetadataKey, meta.ConsumerGroupMemberMetadataKey,
    tmem.ConsumerGroupTargetAssignmentMemberKey, tmeta.ConsumerGroupTargetAssignmentMetadataKey,
    tmeta.ConsumerGroupTargetAssignmentMetadataValue, cur.ConsumerGroupCurrentMemberAssignmentKey)
group_metadata_tombstone = RECORDS.group_metadata_tombstone
target_metadata = RECORDS.target_metadata
member_removal = RECORDS.member_removal


def group_metadata(group_id: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    return CoordinatorRecord(gmeta.ConsumerGroupMetadataKey(group_id=group_id),
                             gmeta.ConsumerGroupMetadataValue(epoch=epoch,
                                                              metadata_hash=metadata_hash), 0)


def member_metadata(group_id: str, m: ConsumerGroupMember) -> CoordinatorRecord:
    classic = None
    if m.classic is not None:
        classic = meta.ClassicMemberMetadata(
            session_timeout_ms=m.classic.session_timeout_ms,
            supported_protocols=[meta.ClassicProtocol(name=n, metadata=md)
                                 for n, md in m.classic.protocols])
    value = meta.ConsumerGroupMemberMetadataValue(
        instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex,
        rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor,
        classic_member_metadata=classic)
    key = meta.ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=m.member_id)
    return CoordinatorRecord(key, value, 0)


def target_member(group_id: str, member_id: str, assignment: Mapping[bytes, Iterable[int]]
                  ) -> CoordinatorRecord:
    value = tmem.ConsumerGroupTargetAssignmentMemberValue(topic_partitions=[
        tmem.TopicPartition(topic_id=t, partitions=ps) for t, ps in sorted_partitions(assignment)])
    key = tmem.ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id)
    return CoordinatorRecord(key, value, 0)


def _epoch_topics(assignment: Mapping[bytes, Mapping[int, int]]) -> list[cur.TopicPartitions]:
    return [cur.TopicPartitions(topic_id=t, partitions=ps, assignment_epochs=epochs)
            for t, ps, epochs in sorted_partitions_with_epochs(assignment)]


def current_assignment(group_id: str, m: ConsumerGroupMember) -> CoordinatorRecord:
    value = cur.ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
        state=int(m.state), assigned_partitions=_epoch_topics(m.assigned),
        partitions_pending_revocation=_epoch_topics(m.pending_revocation))
    key = cur.ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=m.member_id)
    return CoordinatorRecord(key, value, 0)


def regex_record(group_id: str, regex: str, topics: Iterable[str], version: int,
                 timestamp_ms: int) -> CoordinatorRecord:
    key = rx.ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex)
    value = rx.ConsumerGroupRegularExpressionValue(topics=sorted(topics), version=version,
                                                   timestamp=timestamp_ms)
    return CoordinatorRecord(key, value, 0)


def regex_tombstone(group_id: str, regex: str) -> CoordinatorRecord:
    key = rx.ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex)
    return CoordinatorRecord(key, None, None)

