"""Coordinator requests carrying one oversized string field, with the error Kafka's answer.

One case per (API, field) for every coordinator API: the hostile string is put in exactly
one field of an otherwise ordinary request, at a flexible version (non-flexible versions
cannot carry a string over 32,767 bytes: their length prefix is an int16). Shared by the
unit tests of `apis.request_limits` and the broker-level tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_share_group_offsets,
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    delete_share_group_offsets,
    describe_groups,
    describe_share_group_offsets,
    end_txn,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_fetch,
    read_share_group_state,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    sync_group,
    txn_offset_commit,
)

#: The group id of issue 10: over 32,767 bytes, legal for our decoders in flexible versions.
OVERSIZED = "g" * 40_000
TOPIC_ID = bytes(range(1, 17))

GROUP_ID = int(E.INVALID_GROUP_ID)
INVALID = int(E.INVALID_REQUEST)


@dataclass(frozen=True)
class HostileCase:
    """`build(value)` is a request whose `field` holds `value`; `code` is the answer."""

    api: str
    field: str
    version: int
    build: Callable[[str], Any]
    code: int

    @property
    def id(self) -> str:
        return f"{self.api}-{self.field}-v{self.version}"


def _join(group_id: str = "g", member_id: str = "", instance: str | None = None,
          protocol_type: str = "consumer", protocol: str = "range",
          reason: str | None = None) -> Any:
    m = join_group
    return m.JoinGroupRequest(
        group_id=group_id, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
        member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
        protocols=[m.JoinGroupRequestProtocol(name=protocol, metadata=b"\x00\x01")],
        reason=reason)


def _sync(group_id: str = "g", member_id: str = "m", instance: str | None = None,
          protocol_type: str | None = "consumer", protocol: str | None = "range",
          assigned: str = "m") -> Any:
    m = sync_group
    return m.SyncGroupRequest(
        group_id=group_id, generation_id=1, member_id=member_id, group_instance_id=instance,
        protocol_type=protocol_type, protocol_name=protocol,
        assignments=[m.SyncGroupRequestAssignment(member_id=assigned, assignment=b"")])


def _leave(group_id: str = "g", member_id: str = "m", instance: str | None = None,
           reason: str | None = None) -> Any:
    m = leave_group
    return m.LeaveGroupRequest(group_id=group_id, members=[m.MemberIdentity(
        member_id=member_id, group_instance_id=instance, reason=reason)])


def _commit(group_id: str = "g", member_id: str = "", instance: str | None = None,
            topic: str = "t", metadata: str | None = "") -> Any:
    m = offset_commit
    return m.OffsetCommitRequest(
        group_id=group_id, generation_id_or_member_epoch=-1, member_id=member_id,
        group_instance_id=instance, topics=[m.OffsetCommitRequestTopic(
            name=topic, partitions=[m.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=5, committed_metadata=metadata)])])


def _fetch(group_id: str = "g", member_id: str | None = None, topic: str = "t") -> Any:
    m = offset_fetch
    return m.OffsetFetchRequest(groups=[m.OffsetFetchRequestGroup(
        group_id=group_id, member_id=member_id, member_epoch=-1,
        topics=[m.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])])])


def _cg_heartbeat(group_id: str = "g", member_id: str = "m1", instance: str | None = None,
                  rack: str | None = None, topic: str = "t", regex: str | None = None,
                  assignor: str | None = None) -> Any:
    return consumer_group_heartbeat.ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=0, instance_id=instance,
        rack_id=rack, rebalance_timeout_ms=10_000, subscribed_topic_names=[topic],
        subscribed_topic_regex=regex, server_assignor=assignor, topic_partitions=[])


def _sg_heartbeat(group_id: str = "g", member_id: str = "m1", rack: str | None = None,
                  topic: str = "t") -> Any:
    return share_group_heartbeat.ShareGroupHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=0, rack_id=rack,
        subscribed_topic_names=[topic])


def _share_fetch(group_id: str = "g", member_id: str = "m1") -> Any:
    m = share_fetch
    return m.ShareFetchRequest(
        group_id=group_id, member_id=member_id, share_session_epoch=0, max_wait_ms=0,
        min_bytes=1, max_bytes=1 << 20, max_records=10, batch_size=10,
        topics=[m.FetchTopic(topic_id=TOPIC_ID, partitions=[m.FetchPartition(
            partition_index=0, partition_max_bytes=1 << 20)])], forgotten_topics_data=[])


def _share_ack(group_id: str = "g", member_id: str = "m1") -> Any:
    m = share_acknowledge
    return m.ShareAcknowledgeRequest(
        group_id=group_id, member_id=member_id, share_session_epoch=1,
        topics=[m.AcknowledgeTopic(topic_id=TOPIC_ID, partitions=[m.AcknowledgePartition(
            partition_index=0, acknowledgement_batches=[m.AcknowledgementBatch(
                first_offset=0, last_offset=0, acknowledge_types=[1])])])])


def _describe_share_offsets(group_id: str = "g", topic: str = "t") -> Any:
    m = describe_share_group_offsets
    return m.DescribeShareGroupOffsetsRequest(groups=[m.DescribeShareGroupOffsetsRequestGroup(
        group_id=group_id, topics=[m.DescribeShareGroupOffsetsRequestTopic(
            topic_name=topic, partitions=[0])])])


def _alter_share_offsets(group_id: str = "g", topic: str = "t") -> Any:
    m = alter_share_group_offsets
    return m.AlterShareGroupOffsetsRequest(group_id=group_id, topics=[
        m.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[
            m.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=0)])])


def _delete_share_offsets(group_id: str = "g", topic: str = "t") -> Any:
    m = delete_share_group_offsets
    return m.DeleteShareGroupOffsetsRequest(group_id=group_id, topics=[
        m.DeleteShareGroupOffsetsRequestTopic(topic_name=topic)])


def _read_share_state(group_id: str) -> Any:
    m = read_share_group_state
    return m.ReadShareGroupStateRequest(group_id=group_id, topics=[m.ReadStateData(
        topic_id=TOPIC_ID, partitions=[m.PartitionData(partition=0, leader_epoch=0)])])


def _txn_commit(tid: str = "tx", group_id: str = "g", member_id: str = "",
                instance: str | None = None, topic: str = "t",
                metadata: str | None = "") -> Any:
    m = txn_offset_commit
    return m.TxnOffsetCommitRequest(
        transactional_id=tid, group_id=group_id, producer_id=1, producer_epoch=0,
        generation_id_or_member_epoch=-1, member_id=member_id, group_instance_id=instance,
        topics=[m.TxnOffsetCommitRequestTopic(name=topic, partitions=[
            m.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                              committed_metadata=metadata)])])


def _add_partitions_v3(tid: str = "tx", topic: str = "t") -> Any:
    m = add_partitions_to_txn
    return m.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=1,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[m.AddPartitionsToTxnTopic(name=topic, partitions=[0])])


def _add_partitions_v4(tid: str = "tx", topic: str = "t") -> Any:
    m = add_partitions_to_txn
    return m.AddPartitionsToTxnRequest(transactions=[m.AddPartitionsToTxnTransaction(
        transactional_id=tid, producer_id=1, producer_epoch=0, verify_only=True,
        topics=[m.AddPartitionsToTxnTopic(name=topic, partitions=[0])])])


def _alter_configs(name: str = "g", key: str = "consumer.session.timeout.ms",
                   value: str | None = "45000") -> Any:
    m = incremental_alter_configs
    return m.IncrementalAlterConfigsRequest(resources=[m.AlterConfigsResource(
        resource_type=32, resource_name=name, configs=[m.AlterableConfig(
            name=key, config_operation=0, value=value)])])


def cases() -> list[HostileCase]:
    """Every coordinator API with each of its string fields made hostile."""
    C = HostileCase
    return [
        C("JoinGroup", "group_id", 9, lambda v: _join(group_id=v), GROUP_ID),
        C("JoinGroup", "member_id", 9, lambda v: _join(member_id=v), INVALID),
        C("JoinGroup", "group_instance_id", 9, lambda v: _join(instance=v), INVALID),
        C("JoinGroup", "protocol_type", 9, lambda v: _join(protocol_type=v), INVALID),
        C("JoinGroup", "protocols.name", 9, lambda v: _join(protocol=v), INVALID),
        C("JoinGroup", "reason", 9, lambda v: _join(reason=v), INVALID),
        C("SyncGroup", "group_id", 5, lambda v: _sync(group_id=v), GROUP_ID),
        C("SyncGroup", "member_id", 5, lambda v: _sync(member_id=v), INVALID),
        C("SyncGroup", "group_instance_id", 5, lambda v: _sync(instance=v), INVALID),
        C("SyncGroup", "protocol_type", 5, lambda v: _sync(protocol_type=v), INVALID),
        C("SyncGroup", "protocol_name", 5, lambda v: _sync(protocol=v), INVALID),
        C("SyncGroup", "assignments.member_id", 5, lambda v: _sync(assigned=v), INVALID),
        C("Heartbeat", "group_id", 4, lambda v: heartbeat.HeartbeatRequest(
            group_id=v, generation_id=1, member_id="m"), GROUP_ID),
        C("Heartbeat", "member_id", 4, lambda v: heartbeat.HeartbeatRequest(
            group_id="g", generation_id=1, member_id=v), INVALID),
        C("Heartbeat", "group_instance_id", 4, lambda v: heartbeat.HeartbeatRequest(
            group_id="g", generation_id=1, member_id="m", group_instance_id=v), INVALID),
        C("LeaveGroup", "group_id", 5, lambda v: _leave(group_id=v), GROUP_ID),
        C("LeaveGroup", "members.member_id", 5, lambda v: _leave(member_id=v), INVALID),
        C("LeaveGroup", "members.group_instance_id", 5, lambda v: _leave(instance=v), INVALID),
        C("LeaveGroup", "members.reason", 5, lambda v: _leave(reason=v), INVALID),
        C("OffsetCommit", "group_id", 9, lambda v: _commit(group_id=v), GROUP_ID),
        C("OffsetCommit", "member_id", 9, lambda v: _commit(member_id=v), INVALID),
        C("OffsetCommit", "group_instance_id", 9, lambda v: _commit(instance=v), INVALID),
        C("OffsetCommit", "topics.name", 9, lambda v: _commit(topic=v), INVALID),
        C("OffsetCommit", "topics.partitions.committed_metadata", 9,
          lambda v: _commit(metadata=v), INVALID),
        C("OffsetFetch", "groups.group_id", 9, lambda v: _fetch(group_id=v), GROUP_ID),
        C("OffsetFetch", "groups.member_id", 9, lambda v: _fetch(member_id=v), INVALID),
        C("OffsetFetch", "groups.topics.name", 9, lambda v: _fetch(topic=v), INVALID),
        C("OffsetFetch", "group_id", 7, lambda v: offset_fetch.OffsetFetchRequest(
            group_id=v, topics=None), GROUP_ID),
        C("DescribeGroups", "groups", 5, lambda v: describe_groups.DescribeGroupsRequest(
            groups=["ok", v]), GROUP_ID),
        C("DeleteGroups", "groups_names", 2, lambda v: delete_groups.DeleteGroupsRequest(
            groups_names=[v]), GROUP_ID),
        C("ListGroups", "states_filter", 5, lambda v: list_groups.ListGroupsRequest(
            states_filter=[v], types_filter=[]), INVALID),
        C("ListGroups", "types_filter", 5, lambda v: list_groups.ListGroupsRequest(
            states_filter=[], types_filter=[v]), INVALID),
        C("ConsumerGroupHeartbeat", "group_id", 1, lambda v: _cg_heartbeat(group_id=v), GROUP_ID),
        C("ConsumerGroupHeartbeat", "member_id", 1, lambda v: _cg_heartbeat(member_id=v),
          INVALID),
        C("ConsumerGroupHeartbeat", "instance_id", 1, lambda v: _cg_heartbeat(instance=v),
          INVALID),
        C("ConsumerGroupHeartbeat", "rack_id", 1, lambda v: _cg_heartbeat(rack=v), INVALID),
        C("ConsumerGroupHeartbeat", "subscribed_topic_names", 1,
          lambda v: _cg_heartbeat(topic=v), INVALID),
        C("ConsumerGroupHeartbeat", "subscribed_topic_regex", 1,
          lambda v: _cg_heartbeat(regex=v), INVALID),
        C("ConsumerGroupHeartbeat", "server_assignor", 1, lambda v: _cg_heartbeat(assignor=v),
          INVALID),
        C("ConsumerGroupDescribe", "group_ids", 1,
          lambda v: consumer_group_describe.ConsumerGroupDescribeRequest(group_ids=[v]),
          GROUP_ID),
        C("ShareGroupHeartbeat", "group_id", 1, lambda v: _sg_heartbeat(group_id=v), GROUP_ID),
        C("ShareGroupHeartbeat", "member_id", 1, lambda v: _sg_heartbeat(member_id=v), INVALID),
        C("ShareGroupHeartbeat", "rack_id", 1, lambda v: _sg_heartbeat(rack=v), INVALID),
        C("ShareGroupHeartbeat", "subscribed_topic_names", 1, lambda v: _sg_heartbeat(topic=v),
          INVALID),
        C("ShareGroupDescribe", "group_ids", 1,
          lambda v: share_group_describe.ShareGroupDescribeRequest(group_ids=[v]), GROUP_ID),
        C("ShareFetch", "group_id", 1, lambda v: _share_fetch(group_id=v), GROUP_ID),
        C("ShareFetch", "member_id", 1, lambda v: _share_fetch(member_id=v), INVALID),
        C("ShareAcknowledge", "group_id", 1, lambda v: _share_ack(group_id=v), GROUP_ID),
        C("ShareAcknowledge", "member_id", 1, lambda v: _share_ack(member_id=v), INVALID),
        C("DescribeShareGroupOffsets", "groups.group_id", 1,
          lambda v: _describe_share_offsets(group_id=v), GROUP_ID),
        C("DescribeShareGroupOffsets", "groups.topics.topic_name", 1,
          lambda v: _describe_share_offsets(topic=v), INVALID),
        C("AlterShareGroupOffsets", "group_id", 0, lambda v: _alter_share_offsets(group_id=v),
          GROUP_ID),
        C("AlterShareGroupOffsets", "topics.topic_name", 0,
          lambda v: _alter_share_offsets(topic=v), INVALID),
        C("DeleteShareGroupOffsets", "group_id", 0, lambda v: _delete_share_offsets(group_id=v),
          GROUP_ID),
        C("DeleteShareGroupOffsets", "topics.topic_name", 0,
          lambda v: _delete_share_offsets(topic=v), INVALID),
        C("ReadShareGroupState", "group_id", 0, _read_share_state, GROUP_ID),
        C("TxnOffsetCommit", "transactional_id", 5, lambda v: _txn_commit(tid=v), INVALID),
        C("TxnOffsetCommit", "group_id", 5, lambda v: _txn_commit(group_id=v), GROUP_ID),
        C("TxnOffsetCommit", "member_id", 5, lambda v: _txn_commit(member_id=v), INVALID),
        C("TxnOffsetCommit", "group_instance_id", 5, lambda v: _txn_commit(instance=v),
          INVALID),
        C("TxnOffsetCommit", "topics.name", 5, lambda v: _txn_commit(topic=v), INVALID),
        C("TxnOffsetCommit", "topics.partitions.committed_metadata", 5,
          lambda v: _txn_commit(metadata=v), INVALID),
        C("InitProducerId", "transactional_id", 5, lambda v: init_producer_id.InitProducerIdRequest(
            transactional_id=v, transaction_timeout_ms=60_000, producer_id=-1,
            producer_epoch=-1), INVALID),
        C("AddPartitionsToTxn", "v3_and_below_transactional_id", 3,
          lambda v: _add_partitions_v3(tid=v), INVALID),
        C("AddPartitionsToTxn", "v3_and_below_topics.name", 3,
          lambda v: _add_partitions_v3(topic=v), INVALID),
        C("AddPartitionsToTxn", "transactions.transactional_id", 5,
          lambda v: _add_partitions_v4(tid=v), INVALID),
        C("AddOffsetsToTxn", "transactional_id", 4,
          lambda v: add_offsets_to_txn.AddOffsetsToTxnRequest(
              transactional_id=v, producer_id=1, producer_epoch=0, group_id="g"), INVALID),
        C("AddOffsetsToTxn", "group_id", 4, lambda v: add_offsets_to_txn.AddOffsetsToTxnRequest(
            transactional_id="tx", producer_id=1, producer_epoch=0, group_id=v), GROUP_ID),
        C("EndTxn", "transactional_id", 5, lambda v: end_txn.EndTxnRequest(
            transactional_id=v, producer_id=1, producer_epoch=0, committed=True), INVALID),
        C("FindCoordinator", "key", 3, lambda v: find_coordinator.FindCoordinatorRequest(
            key=v, key_type=0), INVALID),
        C("FindCoordinator", "coordinator_keys", 6,
          lambda v: find_coordinator.FindCoordinatorRequest(key_type=0, coordinator_keys=[v]),
          INVALID),
        C("IncrementalAlterConfigs", "resources.resource_name", 1,
          lambda v: _alter_configs(name=v), INVALID),
        C("IncrementalAlterConfigs", "resources.configs.name", 1,
          lambda v: _alter_configs(key=v), INVALID),
        C("IncrementalAlterConfigs", "resources.configs.value", 1,
          lambda v: _alter_configs(value=v), INVALID),
    ]
