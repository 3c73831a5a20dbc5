"""Builders for the streams-group records of `__consumer_offsets` (types 17 and 19-23),
mirroring `StreamsCoordinatorRecordHelpers`: every value at version 0, task lists sorted
by subtopology then partition, client tags by key; a `None` value is a tombstone.
"""

from __future__ import annotations

from collections.abc import Mapping

from groupcoord.coordinator.modern_records import (
    ModernGroupRecords,
    sorted_partitions,
    sorted_partitions_with_epochs,
)
from groupcoord.coordinator.streams.member import StreamsGroupMember
from groupcoord.coordinator.streams.tasks import EpochTasks, Tasks, TasksTuple
from groupcoord.logformat.coordinator_records import CoordinatorRecord
from groupcoord.logformat.generated import streams_group_current_member_assignment as cur
from groupcoord.logformat.generated import streams_group_member_metadata as meta
from groupcoord.logformat.generated import streams_group_metadata as gmeta
from groupcoord.logformat.generated import streams_group_target_assignment_member as tmem
from groupcoord.logformat.generated import streams_group_target_assignment_metadata as tmeta
from groupcoord.logformat.generated import streams_group_topology as topo

# The records built from the keys alone (tombstones, target metadata, removals);
# those called by name elsewhere are named here too.
RECORDS = ModernGroupRecords(
    gmeta.StreamsGroupMetadataKey, meta.StreamsGroupMemberMetadataKey,
    tmem.StreamsGroupTargetAssignmentMemberKey, tmeta.StreamsGroupTargetAssignmentMetadataKey,
    tmeta.StreamsGroupTargetAssignmentMetadataValue, cur.StreamsGroupCurrentMemberAssignmentKey)
target_metadata = RECORDS.target_metadata
member_removal = RECORDS.member_removal


def group_metadata(group_id: str, epoch: int, metadata_hash: int,
                   validated_topology_epoch: int, assignment_configs: Mapping[str, str],
                   stored_description_epoch: int = -1,
                   failed_description_epoch: int = -1) -> CoordinatorRecord:
    value = gmeta.StreamsGroupMetadataValue(
        epoch=epoch, metadata_hash=metadata_hash,
        validated_topology_epoch=validated_topology_epoch,
        last_assignment_configs=[gmeta.LastAssignmentConfig(key=k, value=v)
                                 for k, v in sorted(assignment_configs.items())],
        stored_description_topology_epoch=stored_description_epoch,
        failed_description_topology_epoch=failed_description_epoch)
    return CoordinatorRecord(gmeta.StreamsGroupMetadataKey(group_id=group_id), value, 0)


def topology(group_id: str, value: topo.StreamsGroupTopologyValue) -> CoordinatorRecord:
    return CoordinatorRecord(topo.StreamsGroupTopologyKey(group_id=group_id), value, 0)


def topology_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(topo.StreamsGroupTopologyKey(group_id=group_id), None, None)


def member_metadata(group_id: str, m: StreamsGroupMember) -> CoordinatorRecord:
    endpoint = None if m.user_endpoint is None else \
        meta.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1])
    value = meta.StreamsGroupMemberMetadataValue(
        instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
        topology_epoch=m.topology_epoch, process_id=m.process_id, user_endpoint=endpoint,
        client_tags=[meta.KeyValue(key=k, value=v) for k, v in sorted(m.client_tags)])
    key = meta.StreamsGroupMemberMetadataKey(group_id=group_id, member_id=m.member_id)
    return CoordinatorRecord(key, value, 0)


def _target_ids(tasks: Tasks) -> list[tmem.TaskIds]:
    return [tmem.TaskIds(subtopology_id=s, partitions=p) for s, p in sorted_partitions(tasks)]


def target_member(group_id: str, member_id: str, target: TasksTuple) -> CoordinatorRecord:
    value = tmem.StreamsGroupTargetAssignmentMemberValue(
        active_tasks=_target_ids(target.active), standby_tasks=_target_ids(target.standby),
        warmup_tasks=_target_ids(target.warmup))
    key = tmem.StreamsGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id)
    return CoordinatorRecord(key, value, 0)


def _current_ids(tasks: Tasks) -> list[cur.TaskIds]:
    return [cur.TaskIds(subtopology_id=s, partitions=p) for s, p in sorted_partitions(tasks)]


def _current_ids_with_epochs(tasks: EpochTasks) -> list[cur.TaskIds]:
    return [cur.TaskIds(subtopology_id=s, partitions=p, assignment_epochs=epochs)
            for s, p, epochs in sorted_partitions_with_epochs(tasks)]


def current_assignment(group_id: str, m: StreamsGroupMember) -> CoordinatorRecord:
    a, r = m.assigned, m.pending_revocation
    value = cur.StreamsGroupCurrentMemberAssignmentValue(
        member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
        state=int(m.state),
        active_tasks=_current_ids_with_epochs(a.active), standby_tasks=_current_ids(a.standby),
        warmup_tasks=_current_ids(a.warmup),
        active_tasks_pending_revocation=_current_ids_with_epochs(r.active),
        standby_tasks_pending_revocation=_current_ids(r.standby),
        warmup_tasks_pending_revocation=_current_ids(r.warmup))
    key = cur.StreamsGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=m.member_id)
    return CoordinatorRecord(key, value, 0)


