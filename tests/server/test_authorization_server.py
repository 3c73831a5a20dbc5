"""Authorization over raw frames against an in-process broker with the standard authorizer:
the Acl APIs, and the checks of the group, topic and admin APIs under different principals
(the principal is set on the connection as SASL would set it)."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

from acl_support import ADMIN, acl, client_as, grant
from broker_inproc import InProcBroker, RawClient, run

from groupcoord.logformat.batch import build_batch
from groupcoord.security.acl import AclOperation as Op
from groupcoord.security.acl import PatternType as PT
from groupcoord.security.acl import ResourceType as RT
from groupcoord.server.config import Listener
from groupcoord.storage.faults import FaultInjectingFileIO, FaultRule
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    ScramCredentialDeletion,
)
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.wire.generated.create_acls import CreateAclsRequest, CreateAclsResponse
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
from groupcoord.wire.generated.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.wire.generated.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    UserName,
)
from groupcoord.wire.generated.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from groupcoord.wire.generated.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from groupcoord.wire.generated.list_groups import ListGroupsRequest, ListGroupsResponse
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
from groupcoord.wire.generated.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)

ALICE = "User:alice"


def secured(tmp_path: Path, **overrides: Any) -> InProcBroker:
    settings: dict[str, Any] = {"authorizer": "standard", "super_users": ADMIN,
                                "auto_create_topics": False}
    settings.update(overrides)
    return InProcBroker(tmp_path, **settings)


async def create_topics(b: InProcBroker, *names: str) -> None:
    admin = await client_as(b, ADMIN)
    r = await admin.call(CreateTopicsRequest(topics=[
        CreatableTopic(name=n, num_partitions=2, replication_factor=1) for n in names],
        timeout_ms=5000), 7, CreateTopicsResponse)
    assert [t.error_code for t in r.topics] == [0] * len(names)


def join(group: str) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=10_000,
                            rebalance_timeout_ms=10_000, member_id="", protocol_type="consumer",
                            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")])


def commit(group: str, topic: str) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                               topics=[OffsetCommitRequestTopic(name=topic, partitions=[
                                   OffsetCommitRequestPartition(partition_index=p,
                                                                committed_offset=1)
                                   for p in (0, 1)])])


def test_acl_apis_answer_security_disabled_without_an_authorizer(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            created = await c.call(CreateAclsRequest(creations=[
                acl(RT.TOPIC, "t", ALICE, Op.READ)]), 3, CreateAclsResponse)
            assert [r.error_code for r in created.results] == [E.SECURITY_DISABLED]
            described = await c.call(DescribeAclsRequest(
                resource_type_filter=int(RT.ANY), resource_name_filter=None,
                pattern_type_filter=int(PT.ANY), principal_filter=None, host_filter=None,
                operation=int(Op.ANY), permission_type=1), 3, DescribeAclsResponse)
            assert described.error_code == E.SECURITY_DISABLED
    run(scenario())


def describe_all() -> DescribeAclsRequest:
    return DescribeAclsRequest(resource_type_filter=int(RT.ANY), resource_name_filter=None,
                               pattern_type_filter=int(PT.ANY), principal_filter=None,
                               host_filter=None, operation=int(Op.ANY), permission_type=1)


def test_acl_apis_need_cluster_alter_and_describe_and_validate(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with secured(tmp_path) as b:
            alice = await client_as(b, ALICE)
            denied = await alice.call(CreateAclsRequest(creations=[
                acl(RT.TOPIC, "t", ALICE, Op.READ)]), 3, CreateAclsResponse)
            assert [r.error_code for r in denied.results] == [E.CLUSTER_AUTHORIZATION_FAILED]
            listing = await alice.call(describe_all(), 3, DescribeAclsResponse)
            assert listing.error_code == E.CLUSTER_AUTHORIZATION_FAILED
            admin = await client_as(b, ADMIN)
            created = await admin.call(CreateAclsRequest(creations=[
                acl(RT.TOPIC, "t", ALICE, Op.READ),
                acl(RT.GROUP, "g-", ALICE, Op.READ, pattern=PT.PREFIXED),
                acl(RT.TOPIC, "", ALICE, Op.READ),
                acl(RT.CLUSTER, "not-the-cluster", ALICE, Op.ALTER)]), 3, CreateAclsResponse)
            assert [r.error_code for r in created.results] == [0, 0, E.INVALID_REQUEST,
                                                               E.INVALID_REQUEST]
            # A resource type ANY cannot even be built into a binding in Kafka: the whole
            # request fails, nothing is created.
            failed = await admin.call(CreateAclsRequest(creations=[
                acl(RT.TOPIC, "u", ALICE, Op.READ), acl(RT.ANY, "x", ALICE, Op.READ)]), 3,
                CreateAclsResponse)
            assert [r.error_code for r in failed.results] == [E.UNKNOWN_SERVER_ERROR] * 2
            listing = await admin.call(describe_all(), 3, DescribeAclsResponse)
            assert listing.error_code == 0
            assert sorted((r.resource_type, r.resource_name, r.pattern_type)
                          for r in listing.resources) == [
                (int(RT.TOPIC), "t", int(PT.LITERAL)), (int(RT.GROUP), "g-", int(PT.PREFIXED))]
            deleted = await admin.call(DeleteAclsRequest(filters=[DeleteAclsFilter(
                resource_type_filter=int(RT.GROUP), resource_name_filter=None,
                pattern_type_filter=int(PT.ANY), principal_filter=None, host_filter=None,
                operation=int(Op.ANY), permission_type=1)]), 3, DeleteAclsResponse)
            assert [m.resource_name for m in deleted.filter_results[0].matching_acls] == ["g-"]
            assert len((await admin.call(describe_all(), 3, DescribeAclsResponse)).resources) == 1
            # An UNKNOWN (0) operation fails to parse in Kafka: the connection is closed.
            await admin.send(CreateAclsRequest(creations=[acl(RT.TOPIC, "t", ALICE, Op.UNKNOWN)]), 3)
            assert await admin.closed()
    run(scenario())


def test_acls_survive_a_restart_and_a_refused_write_changes_nothing(tmp_path: Path) -> None:
    io = FaultInjectingFileIO()

    async def first() -> None:
        async with secured(tmp_path, file_io=io) as b:
            await grant(b, acl(RT.GROUP, "kept", ALICE, Op.READ))
            io.add(FaultRule("fsync", errno.EIO, suffix=".tmp"))
            admin = await client_as(b, ADMIN)
            refused = await admin.call(CreateAclsRequest(creations=[
                acl(RT.GROUP, "lost", ALICE, Op.READ)]), 3, CreateAclsResponse)
            assert [r.error_code for r in refused.results] == [E.UNKNOWN_SERVER_ERROR]
            alice = await client_as(b, ALICE)
            lost = await alice.call(join("lost"), 5, JoinGroupResponse)
            assert lost.error_code == E.GROUP_AUTHORIZATION_FAILED

    async def second() -> None:
        async with secured(tmp_path) as b:
            alice = await client_as(b, ALICE)
            kept = await alice.call(join("kept"), 5, JoinGroupResponse)
            assert kept.error_code == E.MEMBER_ID_REQUIRED  # past authorization
            lost = await alice.call(join("lost"), 5, JoinGroupResponse)
            assert lost.error_code == E.GROUP_AUTHORIZATION_FAILED
    run(first())
    run(second())


def test_group_read_gates_the_classic_protocol_and_topic_read_each_commit(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with secured(tmp_path) as b:
            await create_topics(b, "orders", "secret")
            alice = await client_as(b, ALICE)
            denied = await alice.call(join("app"), 5, JoinGroupResponse)
            assert denied.error_code == E.GROUP_AUTHORIZATION_FAILED
            committed = await alice.call(commit("app", "orders"), 8, OffsetCommitResponse)
            assert {p.error_code for t in committed.topics for p in t.partitions} == {
                E.GROUP_AUTHORIZATION_FAILED}
            await grant(b, acl(RT.GROUP, "app", ALICE, Op.READ),
                        acl(RT.TOPIC, "orders", ALICE, Op.READ))
            joined = await alice.call(join("app"), 5, JoinGroupResponse)
            assert joined.error_code == E.MEMBER_ID_REQUIRED
            for topic, code in (("orders", 0), ("secret", E.TOPIC_AUTHORIZATION_FAILED),
                                ("missing", E.TOPIC_AUTHORIZATION_FAILED)):
                r = await alice.call(commit("app", topic), 8, OffsetCommitResponse)
                assert [p.error_code for p in r.topics[0].partitions] == [code, code], topic
    run(scenario())


def test_list_and_describe_groups_show_only_describable_groups(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with secured(tmp_path) as b:
            admin = await client_as(b, ADMIN)
            for group in ("team-a", "team-b", "other"):
                r = await admin.call(join(group), 3, JoinGroupResponse)  # v3: joins at once
                assert r.error_code == 0
            await grant(b, acl(RT.GROUP, "team-", ALICE, Op.DESCRIBE, pattern=PT.PREFIXED))
            alice = await client_as(b, ALICE)
            listed = await alice.call(ListGroupsRequest(), 4, ListGroupsResponse)
            assert sorted(g.group_id for g in listed.groups) == ["team-a", "team-b"]
            everything = await admin.call(ListGroupsRequest(), 4, ListGroupsResponse)
            assert len(everything.groups) == 3
            described = await alice.call(DescribeGroupsRequest(
                groups=["team-a", "other"], include_authorized_operations=True), 5,
                DescribeGroupsResponse)
            by_id = {g.group_id: g for g in described.groups}
            assert by_id["other"].error_code == E.GROUP_AUTHORIZATION_FAILED
            assert described.groups[0].group_id == "other"  # Kafka answers refusals first
            assert by_id["team-a"].error_code == 0
            assert by_id["team-a"].authorized_operations == 1 << Op.DESCRIBE
    run(scenario())


def test_produce_and_fetch_are_refused_per_partition(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with secured(tmp_path) as b:
            await create_topics(b, "open", "closed")
            await grant(b, acl(RT.TOPIC, "open", ALICE, Op.WRITE),
                        acl(RT.TOPIC, "open", ALICE, Op.READ))
            alice = await client_as(b, ALICE)
            batch = build_batch([(b"k", b"v", [], 1000)])
            produced = await alice.call(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
                TopicProduceData(name=n, partition_data=[PartitionProduceData(index=0,
                                                                              records=batch)])
                for n in ("open", "closed")]), 9, ProduceResponse)
            codes = {t.name: t.partition_responses[0].error_code for t in produced.responses}
            assert codes == {"open": 0, "closed": E.TOPIC_AUTHORIZATION_FAILED}
            fetched = await alice.call(FetchRequest(
                replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_epoch=-1,
                topics=[FetchTopic(topic=n, partitions=[FetchPartition(
                    partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])
                    for n in ("open", "closed")]), 12, FetchResponse)
            got = {t.topic: t.partitions[0] for t in fetched.responses}
            assert got["open"].error_code == 0 and got["open"].records
            assert got["closed"].error_code == E.TOPIC_AUTHORIZATION_FAILED
    run(scenario())


def test_metadata_hides_and_refuses_topics_and_creation_needs_create(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with secured(tmp_path) as b:
            await create_topics(b, "visible", "hidden")
            await grant(b, acl(RT.TOPIC, "visible", ALICE, Op.DESCRIBE),
                        acl(RT.TOPIC, "new-", ALICE, Op.CREATE, pattern=PT.PREFIXED))
            alice = await client_as(b, ALICE)
            every = await alice.call(MetadataRequest(topics=None), 12, MetadataResponse)
            assert [t.name for t in every.topics] == ["visible"]
            named = await alice.call(MetadataRequest(topics=[
                MetadataRequestTopic(name="hidden"), MetadataRequestTopic(name="visible")]), 12,
                MetadataResponse)
            assert [(t.name, t.error_code) for t in named.topics] == [
                ("visible", 0), ("hidden", E.TOPIC_AUTHORIZATION_FAILED)]
            created = await alice.call(CreateTopicsRequest(topics=[
                CreatableTopic(name=n, num_partitions=1, replication_factor=1)
                for n in ("new-one", "other")], timeout_ms=5000), 7, CreateTopicsResponse)
            assert [(t.name, t.error_code) for t in created.topics] == [
                ("new-one", 0), ("other", E.TOPIC_AUTHORIZATION_FAILED)]
            # It may create new-one but not describe its configs.
            assert created.topics[0].topic_config_error_code == E.TOPIC_AUTHORIZATION_FAILED
    run(scenario())


async def heartbeat(c: RawClient, group: str, member: str, epoch: int,
                    names: list[str] | None = None, regex: str | None = None) -> Any:
    return await c.call(ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, rebalance_timeout_ms=10_000,
        subscribed_topic_names=names, subscribed_topic_regex=regex, topic_partitions=[]), 1,
        ConsumerGroupHeartbeatResponse)


def test_consumer_heartbeat_checks_group_and_subscribed_topics(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with secured(tmp_path) as b:
            await create_topics(b, "mine", "theirs")
            alice = await client_as(b, ALICE)
            member = "a" * 22
            r = await heartbeat(alice, "cg", member, 0, ["mine"])
            assert r.error_code == E.GROUP_AUTHORIZATION_FAILED
            await grant(b, acl(RT.GROUP, "cg", ALICE, Op.READ),
                        acl(RT.TOPIC, "mine", ALICE, Op.READ))
            r = await heartbeat(alice, "cg", member, 0, ["mine", "theirs"])
            assert r.error_code == E.TOPIC_AUTHORIZATION_FAILED
            r = await heartbeat(alice, "cg", member, 0, ["mine"])
            assert r.error_code == 0
            assert {tp.partitions[0] for tp in r.assignment.topic_partitions} >= {0}
    run(scenario())


def test_a_regex_subscription_resolves_only_to_describable_topics(tmp_path: Path) -> None:
    async def scenario() -> None:
        # The target follows the regex's resolution at once (no assignment interval).
        async with secured(tmp_path, extra={"group.consumer.assignment.interval.ms": "0"}) as b:
            await create_topics(b, "feed-public", "feed-private")
            public_id = b.broker.topics.get("feed-public").topic_id
            await grant(b, acl(RT.GROUP, "rx", ALICE, Op.READ),
                        acl(RT.TOPIC, "feed-public", ALICE, Op.READ))
            alice = await client_as(b, ALICE)
            member = "b" * 22
            r = await heartbeat(alice, "rx", member, 0, regex="feed-.*")
            assert r.error_code == 0
            epoch, assigned = r.member_epoch, set()
            for _ in range(200):  # the refresh runs as its own operation right after
                r = await heartbeat(alice, "rx", member, epoch)
                assert r.error_code == 0
                epoch = r.member_epoch
                if r.assignment is not None:
                    assigned = {bytes(tp.topic_id) for tp in r.assignment.topic_partitions}
                if assigned:
                    break
            assert assigned == {public_id}
    run(scenario())


def test_scram_credential_apis_need_describe_and_alter_on_the_cluster(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with secured(tmp_path) as b:
            alice = await client_as(b, ALICE)
            described = await alice.call(DescribeUserScramCredentialsRequest(
                users=[UserName(name="bob")]), 0, DescribeUserScramCredentialsResponse)
            assert described.error_code == E.CLUSTER_AUTHORIZATION_FAILED
            assert [r.error_code for r in described.results] == [E.CLUSTER_AUTHORIZATION_FAILED]
            altered = await alice.call(AlterUserScramCredentialsRequest(deletions=[
                ScramCredentialDeletion(name="bob", mechanism=1)]), 0,
                AlterUserScramCredentialsResponse)
            assert [(r.user, r.error_code) for r in altered.results] == [
                ("bob", E.CLUSTER_AUTHORIZATION_FAILED)]
            await grant(b, acl(RT.CLUSTER, "kafka-cluster", ALICE, Op.DESCRIBE))
            described = await alice.call(DescribeUserScramCredentialsRequest(
                users=[UserName(name="bob")]), 0, DescribeUserScramCredentialsResponse)
            assert described.error_code == 0
            assert [r.error_code for r in described.results] == [E.RESOURCE_NOT_FOUND]
    run(scenario())


def test_acl_hosts_over_the_ipv6_loopback(tmp_path: Path) -> None:
    """A client on ::1 is `0:0:0:0:0:0:0:1` to Kafka's authorizer: an ACL for `::1` names
    nobody, the uncompressed form and `::1/128` name it, an IPv4 range does not."""
    async def scenario() -> None:
        async with secured(tmp_path, listeners=(Listener("::1", 0),)) as b:
            await create_topics(b, "short", "long", "block", "v4")
            await grant(b, acl(RT.TOPIC, "short", ALICE, Op.DESCRIBE, host="::1"),
                        acl(RT.TOPIC, "long", ALICE, Op.DESCRIBE, host="0:0:0:0:0:0:0:1"),
                        acl(RT.TOPIC, "block", ALICE, Op.DESCRIBE, host="::1/128"),
                        acl(RT.TOPIC, "v4", ALICE, Op.DESCRIBE, host="0.0.0.0/0"))
            alice = await client_as(b, ALICE)
            found = await alice.call(MetadataRequest(topics=[
                MetadataRequestTopic(name=n) for n in ("short", "long", "block", "v4")],
                allow_auto_topic_creation=False), 12, MetadataResponse)
            codes = {t.name: t.error_code for t in found.topics}
            assert codes == {"short": E.TOPIC_AUTHORIZATION_FAILED, "long": 0, "block": 0,
                             "v4": E.TOPIC_AUTHORIZATION_FAILED}
            conn = next(c for c in b.broker.connections if c.principal.name == "alice")
            assert (conn.client_address, conn.client_host) == (
                "0:0:0:0:0:0:0:1", "/0:0:0:0:0:0:0:1")
    run(scenario())
