"""Authorization, differentially: Apache Kafka 4.4 with `StandardAuthorizer` and groupcoord
with `--authorizer standard`, both with `allow.everyone.if.no.acl.found=true` so that the
PLAINTEXT connections of the suite (principal `User:ANONYMOUS`) may manage ACLs (the cluster
has no ACL) and are refused exactly where an ACL names the resource for someone else, or
denies them. Each scenario creates its ACLs with CreateAcls, waits until DescribeAcls shows
them (Kafka applies them from its metadata log after answering), then sends the same raw
requests to both brokers and compares the answers field by field (`differential.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers.broker import BrokerFactory
from helpers.reference_broker import GROUP_SETTINGS, ReferenceBroker

from conformance.conversation import RECORD_TIME_MS, Conversation
from conformance.differential import Endpoint, Scenario, run_both
from groupcoord.logformat.batch import build_batch
from groupcoord.logformat.record import SimpleRecord
from groupcoord.security.acl import AclOperation as Op
from groupcoord.security.acl import AclPermissionType as Perm
from groupcoord.security.acl import PatternType as PT
from groupcoord.security.acl import ResourceType as RT
from groupcoord.wire.generated.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from groupcoord.wire.generated.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
)
from groupcoord.wire.generated.alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
    AlterShareGroupOffsetsResponse,
)
from groupcoord.wire.generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.wire.generated.create_acls import (
    AclCreation,
    CreateAclsRequest,
    CreateAclsResponse,
)
from groupcoord.wire.generated.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
)
from groupcoord.wire.generated.create_topics import (
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from groupcoord.wire.generated.delete_acls import (
    DeleteAclsFilter,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from groupcoord.wire.generated.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from groupcoord.wire.generated.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
)
from groupcoord.wire.generated.delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
    DeleteShareGroupOffsetsResponse,
)
from groupcoord.wire.generated.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicState,
)
from groupcoord.wire.generated.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from groupcoord.wire.generated.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
)
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.wire.generated.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    TopicRequest,
)
from groupcoord.wire.generated.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
    DescribeShareGroupOffsetsResponse,
)
from groupcoord.wire.generated.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from groupcoord.wire.generated.end_txn import EndTxnRequest, EndTxnResponse
from groupcoord.wire.generated.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from groupcoord.wire.generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupcoord.wire.generated.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.wire.generated.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from groupcoord.wire.generated.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from groupcoord.wire.generated.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from groupcoord.wire.generated.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
)
from groupcoord.wire.generated.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from groupcoord.wire.generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.wire.generated.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from groupcoord.wire.generated.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from groupcoord.wire.generated.share_group_describe import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from groupcoord.wire.generated.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.wire.generated.sync_group import SyncGroupRequest, SyncGroupResponse
from groupcoord.wire.generated.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)

pytestmark = pytest.mark.reference

ANON, BOB = "User:ANONYMOUS", "User:bob"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def secured_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceBroker]:
    broker = ReferenceBroker(tmp_path_factory.mktemp("kafka-authz"), overrides={
        "authorizer.class.name": AUTHORIZER, "allow.everyone.if.no.acl.found": "true"})
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def secured_groupcoord(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    factory = BrokerFactory(tmp_path_factory.mktemp("groupcoord-authz"))
    broker = factory.create(extra_args=[
        "--group-initial-rebalance-delay-ms", GROUP_SETTINGS["group.initial.rebalance.delay.ms"],
        "--default-partitions", GROUP_SETTINGS["num.partitions"],
        "--authorizer", "standard", "--allow-everyone-if-no-acl-found",
        "--node-id", "1"])  # Kafka's node id: Metadata names it as controller and replica
    yield Endpoint("groupcoord", "127.0.0.1", broker.port)
    factory.close()


@pytest.fixture
def differential(secured_kafka: ReferenceBroker, secured_groupcoord: Endpoint,
                 request: pytest.FixtureRequest) -> Callable[[Scenario], None]:
    kafka = Endpoint("kafka", "127.0.0.1", secured_kafka.port)
    name = request.node.name.replace("_", "-")[:60]

    def run(scenario: Scenario) -> None:
        run_both(kafka, secured_groupcoord, name, scenario)
    return run


def acl(rt: RT, name: str, principal: str, op: Op, perm: Perm = Perm.ALLOW,
        pt: PT = PT.LITERAL, host: str = "*") -> AclCreation:
    return AclCreation(resource_type=int(rt), resource_name=name, resource_pattern_type=int(pt),
                       principal=principal, host=host, operation=int(op),
                       permission_type=int(perm))


def every_acl() -> DescribeAclsRequest:
    return DescribeAclsRequest(resource_type_filter=int(RT.ANY), resource_name_filter=None,
                               pattern_type_filter=int(PT.ANY), principal_filter=None,
                               host_filter=None, operation=int(Op.ANY),
                               permission_type=int(Perm.ANY))


def scenario_acls(c: Conversation) -> int:
    """How many ACLs on resources named after this scenario the broker applies now."""
    found = c.quiet(every_acl(), 3, DescribeAclsResponse)
    prefix = c.name("")
    return sum(len(r.acls) for r in found.resources if r.resource_name.startswith(prefix))


def grant(c: Conversation, *creations: AclCreation) -> None:
    """CreateAcls (recorded), then wait until the authorizer applies them."""
    before = scenario_acls(c)
    created = c.call("CreateAcls", CreateAclsRequest(creations=list(creations)), 3,
                     CreateAclsResponse)
    added = len({(a.resource_type, a.resource_name, a.resource_pattern_type, a.principal,
                  a.host, a.operation, a.permission_type)
                 for a, r in zip(creations, created.results, strict=True) if r.error_code == 0})
    c.wait_until(lambda: scenario_acls(c) >= before + added, "the ACLs to apply")


def test_acl_apis(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        topic, group = c.name("t"), c.name("g-")
        grant(c, acl(RT.TOPIC, topic, BOB, Op.READ),
              acl(RT.GROUP, group, BOB, Op.ALL, Perm.DENY, PT.PREFIXED),
              acl(RT.TOPIC, topic, BOB, Op.READ),  # the same ACL twice: one result each
              acl(RT.TOPIC, "", BOB, Op.READ), acl(RT.CLUSTER, "other", BOB, Op.ALTER),
              acl(RT.TOPIC, topic, "bob", Op.READ), acl(99, topic, BOB, Op.READ),  # type: ignore[arg-type]
              acl(RT.TOPIC, topic, BOB, 99), acl(RT.TOPIC, topic, BOB, Op.READ, 99))  # type: ignore[arg-type]
        # One ANY (or MATCH) anywhere fails the whole request, as Kafka's constructors throw.
        for bad in (acl(RT.ANY, topic, BOB, Op.READ), acl(RT.TOPIC, topic, BOB, Op.ANY),
                    acl(RT.TOPIC, topic, BOB, Op.READ, pt=PT.MATCH),
                    acl(RT.TOPIC, topic, BOB, Op.READ, Perm.ANY)):
            c.call("CreateAcls with ANY", CreateAclsRequest(creations=[
                acl(RT.TOPIC, c.name("never"), BOB, Op.READ), bad]), 3, CreateAclsResponse)
        c.call("describe one topic", DescribeAclsRequest(
            resource_type_filter=int(RT.TOPIC), resource_name_filter=topic,
            pattern_type_filter=int(PT.LITERAL), principal_filter=None, host_filter=None,
            operation=int(Op.ANY), permission_type=int(Perm.ANY)), 3, DescribeAclsResponse)
        c.call("describe what matches a group", DescribeAclsRequest(
            resource_type_filter=int(RT.GROUP), resource_name_filter=c.name("g-x"),
            pattern_type_filter=int(PT.MATCH), principal_filter=BOB, host_filter="*",
            operation=int(Op.ANY), permission_type=int(Perm.DENY)), 3, DescribeAclsResponse)
        c.call("delete", DeleteAclsRequest(filters=[
            DeleteAclsFilter(resource_type_filter=int(RT.GROUP), resource_name_filter=group,
                             pattern_type_filter=int(PT.PREFIXED), principal_filter=None,
                             host_filter=None, operation=int(Op.ANY),
                             permission_type=int(Perm.ANY)),
            DeleteAclsFilter(resource_type_filter=99, resource_name_filter=topic,
                             pattern_type_filter=int(PT.ANY), principal_filter=None,
                             host_filter=None, operation=int(Op.ANY),
                             permission_type=int(Perm.ANY)),
            DeleteAclsFilter(resource_type_filter=int(RT.TOPIC), resource_name_filter=topic,
                             pattern_type_filter=int(PT.LITERAL), principal_filter=None,
                             host_filter=None, operation=int(Op.WRITE),
                             permission_type=int(Perm.ANY))]), 3, DeleteAclsResponse)
    differential(scenario)


def test_group_apis_without_group_read(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        closed, open_group = c.name("closed"), c.name("open")
        grant(c, acl(RT.GROUP, closed, BOB, Op.READ))
        c.call("JoinGroup", JoinGroupRequest(
            group_id=closed, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
            member_id="", protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")]), 9,
            JoinGroupResponse)
        c.call("SyncGroup", SyncGroupRequest(
            group_id=closed, generation_id=1, member_id="m", protocol_type="consumer",
            protocol_name="range", assignments=[]), 5, SyncGroupResponse)
        c.call("Heartbeat", HeartbeatRequest(group_id=closed, generation_id=1, member_id="m"),
               4, HeartbeatResponse)
        c.call("LeaveGroup", LeaveGroupRequest(group_id=closed, members=[
            MemberIdentity(member_id="m")]), 5, LeaveGroupResponse)
        c.call("OffsetCommit", OffsetCommitRequest(
            group_id=closed, generation_id_or_member_epoch=-1, member_id="",
            topics=[OffsetCommitRequestTopic(name=topic.name, partitions=[
                OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 9,
            OffsetCommitResponse)
        c.call("OffsetFetch", OffsetFetchRequest(groups=[
            OffsetFetchRequestGroup(group_id=closed, topics=None),
            OffsetFetchRequestGroup(group_id=open_group, topics=[OffsetFetchRequestTopics(
                name=topic.name, partition_indexes=[0])])]), 9, OffsetFetchResponse)
        c.call("DescribeGroups", DescribeGroupsRequest(
            groups=[closed, open_group], include_authorized_operations=True), 5,
            DescribeGroupsResponse)
        c.call("FindCoordinator", FindCoordinatorRequest(
            key_type=0, coordinator_keys=[closed, open_group]), 4, FindCoordinatorResponse)
        c.call("ConsumerGroupHeartbeat", ConsumerGroupHeartbeatRequest(
            group_id=closed, member_id="a" * 22, member_epoch=0, rebalance_timeout_ms=10_000,
            subscribed_topic_names=[topic.name], topic_partitions=[]), 1,
            ConsumerGroupHeartbeatResponse)
        c.call("ConsumerGroupDescribe", ConsumerGroupDescribeRequest(
            group_ids=[closed], include_authorized_operations=True), 1,
            ConsumerGroupDescribeResponse)
        c.call("DeleteGroups", DeleteGroupsRequest(groups_names=[closed]), 2,
               DeleteGroupsResponse)
    differential(scenario)


def test_topic_apis_without_topic_access(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        name = topic.name
        grant(c, acl(RT.TOPIC, name, BOB, Op.ALL))
        c.call("Metadata", MetadataRequest(topics=[MetadataRequestTopic(name=name)],
                                           allow_auto_topic_creation=False), 12,
               MetadataResponse)
        c.call("Produce", ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
            TopicProduceData(name=name, partition_data=[PartitionProduceData(
                index=0, records=b"")])]), 9, ProduceResponse)
        c.call("Fetch", FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0,
                                     max_bytes=1 << 20, session_epoch=-1, topics=[
            FetchTopic(topic=name, partitions=[FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 12,
            FetchResponse)
        c.call("ListOffsets", ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
            name=name, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]),
            7, ListOffsetsResponse)
        c.call("OffsetCommit", OffsetCommitRequest(
            group_id=c.name("g"), generation_id_or_member_epoch=-1, member_id="",
            topics=[OffsetCommitRequestTopic(name=name, partitions=[
                OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 9,
            OffsetCommitResponse)
        c.call("ConsumerGroupHeartbeat", ConsumerGroupHeartbeatRequest(
            group_id=c.name("g"), member_id="b" * 22, member_epoch=0,
            rebalance_timeout_ms=10_000, subscribed_topic_names=[name], topic_partitions=[]),
            1, ConsumerGroupHeartbeatResponse)
        c.call("DescribeConfigs", DescribeConfigsRequest(resources=[DescribeConfigsResource(
            resource_type=2, resource_name=name, configuration_keys=None)]), 4,
            DescribeConfigsResponse)
        c.call("CreatePartitions", CreatePartitionsRequest(topics=[CreatePartitionsTopic(
            name=name, count=3, assignments=None)], timeout_ms=5000), 3,
            CreatePartitionsResponse)
        c.call("DeleteRecords", DeleteRecordsRequest(topics=[DeleteRecordsTopic(
            name=name, partitions=[DeleteRecordsPartition(partition_index=0, offset=0)])],
            timeout_ms=5000), 2, DeleteRecordsResponse)
        c.call("DeleteTopics", DeleteTopicsRequest(topic_names=[name], timeout_ms=5000), 5,
               DeleteTopicsResponse)
    differential(scenario)


def test_prefixed_allow_literal_deny_and_implied_describe(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        open_topic, deny_topic = c.create_topic("p-open"), c.create_topic("p-deny")
        grant(c, acl(RT.TOPIC, c.name("p-"), ANON, Op.ALL, pt=PT.PREFIXED),
              acl(RT.TOPIC, deny_topic.name, ANON, Op.WRITE, Perm.DENY))
        for topic in (open_topic, deny_topic):
            c.call(f"Metadata {topic.name}", MetadataRequest(
                topics=[MetadataRequestTopic(name=topic.name)],
                allow_auto_topic_creation=False, include_topic_authorized_operations=True),
                12, MetadataResponse)
            c.call(f"OffsetCommit {topic.name}", OffsetCommitRequest(
                group_id=c.name("g"), generation_id_or_member_epoch=-1, member_id="",
                topics=[OffsetCommitRequestTopic(name=topic.name, partitions=[
                    OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])]),
                9, OffsetCommitResponse)
        c.call("ListOffsets", ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
            name=t.name, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])
            for t in (open_topic, deny_topic)]), 7, ListOffsetsResponse)
        batch = build_batch([SimpleRecord(b"k", b"v", (), RECORD_TIME_MS)])
        c.call("Produce to both", ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
            TopicProduceData(name=t.name, partition_data=[PartitionProduceData(
                index=0, records=batch)]) for t in (open_topic, deny_topic)]), 9,
            ProduceResponse)
    differential(scenario)


def test_transactional_ids_without_write(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        tid, group = c.name("tx"), c.name("g")
        grant(c, acl(RT.TRANSACTIONAL_ID, tid, BOB, Op.WRITE))
        c.call("InitProducerId", InitProducerIdRequest(
            transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1,
            producer_epoch=-1), 5, InitProducerIdResponse)
        c.call("FindCoordinator", FindCoordinatorRequest(
            key_type=1, coordinator_keys=[tid]), 4, FindCoordinatorResponse)
        c.call("AddPartitionsToTxn", AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=5,
            v3_and_below_producer_epoch=0, v3_and_below_topics=[AddPartitionsToTxnTopic(
                name=topic.name, partitions=[0])]), 3, AddPartitionsToTxnResponse)
        c.call("AddOffsetsToTxn", AddOffsetsToTxnRequest(
            transactional_id=tid, producer_id=5, producer_epoch=0, group_id=group), 4,
            AddOffsetsToTxnResponse)
        c.call("TxnOffsetCommit", TxnOffsetCommitRequest(
            transactional_id=tid, group_id=group, producer_id=5, producer_epoch=0,
            topics=[TxnOffsetCommitRequestTopic(name=topic.name, partitions=[
                TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 3,
            TxnOffsetCommitResponse)
        c.call("EndTxn", EndTxnRequest(transactional_id=tid, producer_id=5, producer_epoch=0,
                                       committed=True), 4, EndTxnResponse)
    differential(scenario)


def test_authorized_operations_follow_the_acls(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        grant(c, acl(RT.GROUP, group, ANON, Op.READ),
              acl(RT.TOPIC, topic.name, ANON, Op.ALTER_CONFIGS),
              acl(RT.TOPIC, topic.name, ANON, Op.WRITE, Perm.DENY))
        joined = c.call("join", ConsumerGroupHeartbeatRequest(
            group_id=group, member_id="c" * 22, member_epoch=0, rebalance_timeout_ms=10_000,
            subscribed_topic_names=[], topic_partitions=[]), 1, ConsumerGroupHeartbeatResponse)
        assert joined.error_code == 0
        c.call("ConsumerGroupDescribe", ConsumerGroupDescribeRequest(
            group_ids=[group], include_authorized_operations=True), 1,
            ConsumerGroupDescribeResponse)
        c.call("DescribeGroups", DescribeGroupsRequest(
            groups=[c.name("never-used")], include_authorized_operations=True), 5,
            DescribeGroupsResponse)
        c.call("Metadata", MetadataRequest(topics=[MetadataRequestTopic(name=topic.name)],
                                           allow_auto_topic_creation=False,
                                           include_topic_authorized_operations=True), 12,
               MetadataResponse)
    differential(scenario)


def test_share_group_apis(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        topic, hidden = c.create_topic("t"), c.create_topic("hidden")
        closed, open_group = c.name("closed"), c.name("open")
        grant(c, acl(RT.GROUP, closed, BOB, Op.READ), acl(RT.TOPIC, hidden.name, BOB, Op.READ))
        c.call("ShareGroupHeartbeat closed", ShareGroupHeartbeatRequest(
            group_id=closed, member_id="d" * 22, member_epoch=0,
            subscribed_topic_names=[topic.name]), 1, ShareGroupHeartbeatResponse)
        c.call("ShareGroupHeartbeat hidden topic", ShareGroupHeartbeatRequest(
            group_id=open_group, member_id="e" * 22, member_epoch=0,
            subscribed_topic_names=[topic.name, hidden.name]), 1, ShareGroupHeartbeatResponse)
        c.call("ShareGroupDescribe", ShareGroupDescribeRequest(group_ids=[closed]), 1,
               ShareGroupDescribeResponse)
        c.call("DescribeShareGroupOffsets", DescribeShareGroupOffsetsRequest(groups=[
            DescribeShareGroupOffsetsRequestGroup(group_id=closed, topics=None),
            DescribeShareGroupOffsetsRequestGroup(group_id=open_group, topics=[
                DescribeShareGroupOffsetsRequestTopic(topic_name=hidden.name,
                                                      partitions=[0])])]), 1,
            DescribeShareGroupOffsetsResponse)
        c.call("AlterShareGroupOffsets closed", AlterShareGroupOffsetsRequest(
            group_id=closed, topics=[AlterShareGroupOffsetsRequestTopic(
                topic_name=topic.name, partitions=[AlterShareGroupOffsetsRequestPartition(
                    partition_index=0, start_offset=0)])]), 0, AlterShareGroupOffsetsResponse)
        c.call("DeleteShareGroupOffsets closed", DeleteShareGroupOffsetsRequest(
            group_id=closed, topics=[DeleteShareGroupOffsetsRequestTopic(
                topic_name=topic.name)]), 0, DeleteShareGroupOffsetsResponse)
        # An empty share group (a member joined and left) for the topic-level refusal.
        member = "f" * 22
        joined = c.quiet(ShareGroupHeartbeatRequest(
            group_id=open_group, member_id=member, member_epoch=0,
            subscribed_topic_names=[topic.name]), 1, ShareGroupHeartbeatResponse)
        assert joined.error_code == 0, joined
        c.quiet(ShareGroupHeartbeatRequest(group_id=open_group, member_id=member,
                                           member_epoch=-1), 1, ShareGroupHeartbeatResponse)
        c.call("DeleteShareGroupOffsets hidden", DeleteShareGroupOffsetsRequest(
            group_id=open_group, topics=[DeleteShareGroupOffsetsRequestTopic(
                topic_name=hidden.name)]), 0, DeleteShareGroupOffsetsResponse)
    differential(scenario)


def test_offsets_of_topics_the_principal_may_not_describe(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        shown, hidden = c.create_topic("shown"), c.create_topic("hidden")
        group = c.name("g")
        for topic in (shown, hidden):
            committed = c.quiet(OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=-1, member_id="",
                topics=[OffsetCommitRequestTopic(name=topic.name, partitions=[
                    OffsetCommitRequestPartition(partition_index=0, committed_offset=3)])]), 9,
                OffsetCommitResponse)
            assert committed.topics[0].partitions[0].error_code == 0
        grant(c, acl(RT.TOPIC, hidden.name, BOB, Op.READ))
        c.call("OffsetFetch v9 all", OffsetFetchRequest(groups=[
            OffsetFetchRequestGroup(group_id=group, topics=None)]), 9, OffsetFetchResponse)
        c.call("OffsetFetch v7 named", OffsetFetchRequest(group_id=group, topics=[
            OffsetFetchRequestTopic(name=t.name, partition_indexes=[0])
            for t in (shown, hidden)]), 7, OffsetFetchResponse)
        c.call("OffsetFetch v7 all", OffsetFetchRequest(group_id=group, topics=None), 7,
               OffsetFetchResponse)
        c.call("OffsetDelete", OffsetDeleteRequest(group_id=group, topics=[
            OffsetDeleteRequestTopic(name=t.name, partitions=[
                OffsetDeleteRequestPartition(partition_index=0)]) for t in (shown, hidden)]), 0,
            OffsetDeleteResponse)
        c.call("DescribeProducers", DescribeProducersRequest(topics=[
            TopicRequest(name=t.name, partition_indexes=[0]) for t in (shown, hidden)]), 0,
            DescribeProducersResponse)
        c.call("DeleteTopics by id", DeleteTopicsRequest(topics=[
            DeleteTopicState(name=None, topic_id=hidden.topic_id)], timeout_ms=5000), 6,
            DeleteTopicsResponse)
    differential(scenario)


def test_configs_and_transactions_describe(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        hidden = c.create_topic("hidden")
        closed, tid = c.name("closed"), c.name("tx")
        grant(c, acl(RT.TOPIC, hidden.name, BOB, Op.ALL), acl(RT.GROUP, closed, BOB, Op.ALL),
              acl(RT.TRANSACTIONAL_ID, tid, BOB, Op.ALL))
        c.call("DescribeConfigs", DescribeConfigsRequest(resources=[
            DescribeConfigsResource(resource_type=2, resource_name=hidden.name,
                                    configuration_keys=None),
            DescribeConfigsResource(resource_type=32, resource_name=closed,
                                    configuration_keys=None)]), 4, DescribeConfigsResponse)
        c.call("IncrementalAlterConfigs", IncrementalAlterConfigsRequest(resources=[
            AlterConfigsResource(resource_type=2, resource_name=hidden.name, configs=[
                AlterableConfig(name="retention.ms", config_operation=0, value="1000")]),
            AlterConfigsResource(resource_type=32, resource_name=closed, configs=[
                AlterableConfig(name="consumer.session.timeout.ms", config_operation=0,
                                value="50000")])]), 1, IncrementalAlterConfigsResponse)
        c.call("DescribeTransactions", DescribeTransactionsRequest(transactional_ids=[tid]), 0,
               DescribeTransactionsResponse)
        c.call("ListTransactions", ListTransactionsRequest(), 1, ListTransactionsResponse)
        c.call("FindCoordinator v3", FindCoordinatorRequest(key=closed, key_type=0), 3,
               FindCoordinatorResponse)
    differential(scenario)


def test_a_regex_subscription_resolves_to_describable_topics(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        shown, hidden = c.create_topic("rx-a"), c.create_topic("rx-b")
        group, member = c.name("g"), "r" * 22
        grant(c, acl(RT.TOPIC, hidden.name, BOB, Op.READ))
        first = c.quiet(ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=10_000,
            subscribed_topic_regex=c.name("rx-") + ".*", topic_partitions=[]), 1,
            ConsumerGroupHeartbeatResponse)
        assert first.error_code == 0, first
        state: dict[str, Any] = {"epoch": first.member_epoch, "assignment": first.assignment}

        def assigned() -> bool:
            # Both brokers resolve the regex off the heartbeat path; poll until it lands.
            if state["assignment"] is not None and state["assignment"].topic_partitions:
                return True
            r = c.quiet(ConsumerGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=state["epoch"]), 1,
                ConsumerGroupHeartbeatResponse)
            assert r.error_code == 0, r
            state["epoch"] = r.member_epoch
            if r.assignment is not None:
                state["assignment"] = r.assignment
            return False
        c.wait_until(assigned, "the regex to resolve")
        c.record("assignment", state["assignment"])
        assert {bytes(tp.topic_id) for tp in state["assignment"].topic_partitions} == {
            bytes(shown.topic_id)}
    differential(scenario)


def test_create_acls_past_kafkas_bound_of_records_per_request(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        many = [acl(RT.TOPIC, c.name(f"bound-{i}"), BOB, Op.READ) for i in range(10_001)]
        c.call("CreateAcls 10,001", CreateAclsRequest(creations=many), 3, CreateAclsResponse)
        c.call("describe them", DescribeAclsRequest(
            resource_type_filter=int(RT.TOPIC), resource_name_filter=c.name("bound-0"),
            pattern_type_filter=int(PT.LITERAL), principal_filter=None, host_filter=None,
            operation=int(Op.ANY), permission_type=int(Perm.ANY)), 3, DescribeAclsResponse)
    differential(scenario)


# -- ACL hosts: the suite connects from 127.0.0.1, which Kafka matches as the bare address ----

def fetch_one(c: Conversation, step: str, name: str) -> FetchResponse:
    return c.call(step, FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0,
                                     max_bytes=1 << 20, session_epoch=-1, topics=[
        FetchTopic(topic=name, partitions=[FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 12, FetchResponse)


def produce_one(c: Conversation, step: str, name: str) -> ProduceResponse:
    batch = build_batch([SimpleRecord(b"k", b"v", (), RECORD_TIME_MS)])
    return c.call(step, ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
        TopicProduceData(name=name, partition_data=[PartitionProduceData(
            index=0, records=batch)])]), 9, ProduceResponse)


def test_acls_from_the_clients_host_apply(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        deny_host, deny_range = c.create_topic("deny-host"), c.create_topic("deny-range")
        allow_host, allow_range = c.create_topic("allow-host"), c.create_topic("allow-range")
        other_host, ipv6_host = c.create_topic("other-host"), c.create_topic("ipv6-host")
        deny_all = c.create_topic("deny-star")
        grant(c,
              acl(RT.TOPIC, deny_host.name, ANON, Op.ALL),
              acl(RT.TOPIC, deny_host.name, "User:*", Op.READ, Perm.DENY, host="127.0.0.1"),
              acl(RT.TOPIC, deny_range.name, ANON, Op.ALL),
              acl(RT.TOPIC, deny_range.name, "User:*", Op.WRITE, Perm.DENY,
                  host="127.0.0.0/8"),
              acl(RT.TOPIC, allow_host.name, ANON, Op.ALL, host="127.0.0.1"),
              acl(RT.TOPIC, allow_range.name, ANON, Op.ALL, host="127.1.2.3/8"),
              acl(RT.TOPIC, other_host.name, ANON, Op.ALL, host="10.0.0.1"),
              # Kafka compares the IPv6 form Java prints, so `::1` names no client at all.
              acl(RT.TOPIC, ipv6_host.name, ANON, Op.ALL, host="::1"),
              acl(RT.TOPIC, ipv6_host.name, ANON, Op.ALL, host="::/0"),
              acl(RT.TOPIC, deny_all.name, ANON, Op.ALL),
              acl(RT.TOPIC, deny_all.name, ANON, Op.READ, Perm.DENY, host="*"))
        topics = (deny_host, deny_range, allow_host, allow_range, other_host, ipv6_host,
                  deny_all)
        for topic in topics:
            fetch_one(c, f"Fetch {topic.name}", topic.name)
            produce_one(c, f"Produce {topic.name}", topic.name)
        c.call("Metadata with operations", MetadataRequest(
            topics=[MetadataRequestTopic(name=t.name) for t in topics],
            allow_auto_topic_creation=False, include_topic_authorized_operations=True), 12,
            MetadataResponse)
    differential(scenario)


# Host patterns CreateAcls must accept or refuse as Kafka 4.4 (KIP-1276 CIDR blocks).
HOST_PATTERNS = (
    "127.0.0.1", "localhost", "::1", "0:0:0:0:0:0:0:1", "127.000.000.001", "127.0.0.0/8",
    "127.0.0.1/32", "0.0.0.0/0", "127.000.000.001/8", "127.0.0.1/08", "::1/128", "::/0",
    "[::1]/128", "::1/+128", "2001:db8::1/64", "::1.2.3.4/120",
    # refused, each with commons-net's words in the message
    "", "/127.0.0.1", "127.0.0.0/33", "300.0.0.0/8", "127.0.0/8", "127.0.0.0/-1",
    "127.0.0.1/", "abc/8", "127.0.0.0/8/9", " 127.0.0.0/8", "127.0.0.1/255.0.0.0",
    "127.0.0.1/1234", "::1/129", "::1/-1", "::1/", "::1/1x", "::1/ 128", "1:2:3/64",
    "::g/64", "::ffff:127.0.0.1/128", "::1/99999999999", "::1%999999/128",
)


def test_create_acls_host_patterns(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.name("hosts")
        created = c.call("CreateAcls", CreateAclsRequest(creations=[
            acl(RT.TOPIC, topic, BOB, Op.READ, host=host) for host in HOST_PATTERNS]), 3,
            CreateAclsResponse)
        # The differential hides message text; these are compared word for word.
        c.record("messages", [(host, r.error_code, r.error_message)
                              for host, r in zip(HOST_PATTERNS, created.results, strict=True)])
        accepted = sum(r.error_code == 0 for r in created.results)
        c.wait_until(lambda: scenario_acls(c) >= accepted, "the ACLs to apply")
        c.call("describe by host", DescribeAclsRequest(
            resource_type_filter=int(RT.TOPIC), resource_name_filter=topic,
            pattern_type_filter=int(PT.LITERAL), principal_filter=None,
            host_filter="127.0.0.0/8", operation=int(Op.ANY), permission_type=int(Perm.ANY)),
            3, DescribeAclsResponse)
    differential(scenario)


def test_create_topics_success_has_a_null_message(differential: Any) -> None:
    def scenario(c: Conversation) -> None:
        for validate_only in (True, False):
            created = c.quiet(CreateTopicsRequest(
                topics=[CreatableTopic(name=c.name("created"), num_partitions=1,
                                       replication_factor=1, configs=[])],
                timeout_ms=10_000, validate_only=validate_only), 7, CreateTopicsResponse)
            # The message itself (None, not ""): the differential would show only its presence.
            c.record(f"CreateTopics validate_only={validate_only}",
                     [(t.error_code, t.error_message) for t in created.topics])
    differential(scenario)
