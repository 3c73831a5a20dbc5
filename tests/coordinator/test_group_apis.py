"""The group API handlers over a fake request context: version gates, topic checks done
before the coordinator, multi-group splitting per shard, response shapes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from groupcoord.apis import (
    consumer_group_describe,
    delete_groups,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from groupcoord.apis.common import GROUP_OPERATIONS
from groupcoord.apis.registry import load_handlers
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.ids import SequentialIds
from groupcoord.coordinator.partitioning import partition_for
from groupcoord.coordinator.result import OpContext
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.consumer_group_describe import ConsumerGroupDescribeRequest
from groupcoord.wire.generated.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest
from groupcoord.wire.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.wire.generated.list_groups import ListGroupsRequest
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.wire.generated.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)

TOPIC_ID = bytes(range(16))
PARTITIONS = 5


@dataclass
class Info:
    name: str
    topic_id: bytes
    num_partitions: int


class Topics:
    def __init__(self) -> None:
        self.topics = {"t": Info("t", TOPIC_ID, 2)}

    def get(self, name: str) -> Info | None:
        return self.topics.get(name)

    def by_id(self, topic_id: bytes) -> Info | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)


@dataclass
class Groups:
    now: int = 1_000
    shards: dict[int, GroupCoordinatorShard] = field(default_factory=dict)
    num_partitions: int = PARTITIONS

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, PARTITIONS)

    async def call(self, group_id: str, op: Any) -> Any:
        return await self.call_shard(self.partition_for(group_id), op)

    def submit(self, group_id: str, op: Any) -> asyncio.Future[Any]:
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(self._run(self.partition_for(group_id), op))
        return fut

    async def call_shard(self, partition: int, op: Any) -> Any:
        return self._run(partition, op)

    def _run(self, partition: int, op: Any) -> Any:
        shard = self.shards.get(partition)
        if shard is None:
            shard = GroupCoordinatorShard(partition, GroupCoordinatorConfig(), SequentialIds())
            shard.on_loaded(self.now)
            self.shards[partition] = shard
        result = op(shard, OpContext("cli", "/1.2.3.4", 1), self.now)
        for rec in result.records:
            shard.replay(rec)
        return result.response


class Shares:
    """Records which groups' share delivery state DeleteGroups dropped."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    async def delete_group_state(self, group_id: str) -> None:
        self.deleted.append(group_id)


class Ctx:
    def __init__(self) -> None:
        self.groups = Groups()
        self.topics = Topics()
        self.shares = Shares()
        self.authorizer = None  # no authorizer: every check passes


def run(module: Any, ctx: Ctx, request: Any, version: int) -> Any:
    assert module.MIN_VERSION <= version <= module.MAX_VERSION

    async def handle() -> Any:
        # A handler is a coroutine function, or returns an awaitable (offset_commit).
        return await module.handle(ctx, None, request, version)

    return asyncio.run(handle())


def commit_request(topics: list[tuple[str, bytes, list[int]]], group: str = "g") -> Any:
    return OffsetCommitRequest(group_id=group, topics=[
        OffsetCommitRequestTopic(name=n, topic_id=i, partitions=[
            OffsetCommitRequestPartition(partition_index=p, committed_offset=10 + p)
            for p in ps]) for n, i, ps in topics])


def test_module_versions() -> None:
    expected = {join_group: (11, 0, 9), sync_group: (14, 0, 5), heartbeat: (12, 0, 4),
                leave_group: (13, 0, 5), offset_commit: (8, 2, 10), offset_fetch: (9, 1, 10),
                offset_delete: (47, 0, 0), describe_groups: (15, 0, 6), list_groups: (16, 0, 5),
                delete_groups: (42, 0, 3), consumer_group_describe: (69, 0, 1)}
    table = load_handlers()
    for module, (key, lo, hi) in expected.items():
        # The table takes the api key from the module's request class.
        assert table[key].handler is module.handle
        assert (module.MIN_VERSION, module.MAX_VERSION) == (lo, hi)
        assert (table[key].min_version, table[key].max_version) == (lo, hi)


def test_offset_commit_topic_checks() -> None:
    ctx = Ctx()
    req = commit_request([("t", b"", [0, 1, 7]), ("missing", b"", [0])])
    resp = run(offset_commit, ctx, req, 9)
    errs = [[(p.partition_index, p.error_code) for p in t.partitions] for t in resp.topics]
    assert errs == [[(0, 0), (1, 0), (7, E.UNKNOWN_TOPIC_OR_PARTITION)],
                    [(0, E.UNKNOWN_TOPIC_OR_PARTITION)]]
    req = commit_request([("", TOPIC_ID, [0]), ("", b"\x09" * 16, [0])])
    resp = run(offset_commit, ctx, req, 10)
    assert [t.partitions[0].error_code for t in resp.topics] == [0, E.UNKNOWN_TOPIC_ID]
    assert resp.topics[0].topic_id == TOPIC_ID


def test_offset_commit_error_response_covers_every_partition() -> None:
    req = commit_request([("t", b"", [0, 1])])
    resp = offset_commit.error_response(req, 9, E.NOT_COORDINATOR)
    assert [p.error_code for p in resp.topics[0].partitions] == [E.NOT_COORDINATOR] * 2


def test_offset_fetch_multi_group_and_topic_ids() -> None:
    ctx = Ctx()
    run(offset_commit, ctx, commit_request([("t", b"", [0])], group="g1"), 9)
    run(offset_commit, ctx, commit_request([("t", b"", [1])], group="g2"), 9)
    req = OffsetFetchRequest(groups=[
        OffsetFetchRequestGroup(group_id="g1", topics=None),
        OffsetFetchRequestGroup(group_id="g2", topics=[
            OffsetFetchRequestTopics(topic_id=TOPIC_ID, partition_indexes=[1]),
            OffsetFetchRequestTopics(topic_id=b"\x07" * 16, partition_indexes=[0])])])
    resp = run(offset_fetch, ctx, req, 10)
    g1, g2 = resp.groups
    assert g1.group_id == "g1" and g1.topics[0].topic_id == TOPIC_ID
    assert g1.topics[0].partitions[0].committed_offset == 10
    assert g2.topics[0].partitions[0].committed_offset == 11
    assert g2.topics[1].partitions[0].error_code == E.UNKNOWN_TOPIC_ID


def test_offset_fetch_error_response_v1_reports_per_partition() -> None:
    from groupcoord.wire.generated.offset_fetch import OffsetFetchRequestTopic

    req = OffsetFetchRequest(group_id="g", topics=[
        OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])])
    resp = offset_fetch.error_response(req, 1, E.COORDINATOR_LOAD_IN_PROGRESS)
    assert [p.error_code for p in resp.topics[0].partitions] == [E.COORDINATOR_LOAD_IN_PROGRESS] * 2
    assert offset_fetch.error_response(req, 3, 15).error_code == 15


def test_offset_delete_unknown_partition() -> None:
    ctx = Ctx()
    run(offset_commit, ctx, commit_request([("t", b"", [0])]), 9)
    req = OffsetDeleteRequest(group_id="g", topics=[OffsetDeleteRequestTopic(
        name="t", partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in (0, 9)])])
    resp = run(offset_delete, ctx, req, 0)
    errs = sorted((p.partition_index, p.error_code) for t in resp.topics for p in t.partitions)
    assert errs == [(0, 0), (9, E.UNKNOWN_TOPIC_OR_PARTITION)]


def test_describe_list_delete_across_shards() -> None:
    ctx = Ctx()
    names = ["a", "b", "c", "d"]
    for g in names:
        run(offset_commit, ctx, commit_request([("t", b"", [0])], group=g), 9)
    assert len({ctx.groups.partition_for(g) for g in names}) > 1
    resp = run(describe_groups, ctx, DescribeGroupsRequest(
        groups=["a", "zz"], include_authorized_operations=True), 6)
    a, zz = resp.groups
    assert (a.group_state, a.error_code, a.authorized_operations) == ("Empty", 0,
                                                                      GROUP_OPERATIONS)
    assert zz.error_code == E.GROUP_ID_NOT_FOUND
    resp = run(describe_groups, ctx, DescribeGroupsRequest(groups=["a"]), 2)
    assert resp.groups[0].authorized_operations == -2147483648
    listed = run(list_groups, ctx, ListGroupsRequest(states_filter=["Empty"]), 5)
    assert sorted(g.group_id for g in listed.groups) == names
    resp = run(delete_groups, ctx, DeleteGroupsRequest(groups_names=["d", "zz", "a"]), 2)
    assert [(r.group_id, r.error_code) for r in resp.results] == [
        ("d", 0), ("zz", E.GROUP_ID_NOT_FOUND), ("a", 0)]
    assert sorted(ctx.shares.deleted) == ["a", "d"]  # only groups really deleted
    listed = run(list_groups, ctx, ListGroupsRequest(), 0)
    assert sorted(g.group_id for g in listed.groups) == ["b", "c"]


def test_delete_groups_v3_messages_are_null_as_kafka_leaves_them() -> None:
    """`GroupCoordinatorShard.deleteGroups` (4.4) sets only error codes; the v3 ErrorMessage
    is on the wire and null for deleted, missing and non-empty groups alike."""
    ctx = Ctx()
    run(offset_commit, ctx, commit_request([("t", b"", [0])], group="a"), 9)
    # JoinGroup v3 takes a member without the MEMBER_ID_REQUIRED round trip (KIP-394).
    run(join_group, ctx, JoinGroupRequest(
        group_id="busy", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
        protocol_type="consumer", protocols=[JoinGroupRequestProtocol(name="range")]), 3)
    resp = run(delete_groups, ctx, DeleteGroupsRequest(groups_names=["a", "zz", "busy"]), 3)
    wire, _ = DeleteGroupsResponse.decode(resp.encode(3), 0, 3)
    assert [(r.group_id, r.error_code, r.error_message) for r in wire.results] == [
        ("a", 0, None), ("zz", E.GROUP_ID_NOT_FOUND, None), ("busy", E.NON_EMPTY_GROUP, None)]
    assert delete_groups.MAX_VERSION == DeleteGroupsResponse.MAX_VERSION == 3


def test_consumer_group_describe_answers_group_id_not_found() -> None:
    ctx = Ctx()
    run(offset_commit, ctx, commit_request([("t", b"", [0])], group="classic"), 9)
    resp = run(consumer_group_describe, ctx,
               ConsumerGroupDescribeRequest(group_ids=["classic", "nope", ""]), 1)
    assert [(g.error_code, g.error_message) for g in resp.groups] == [
        (E.GROUP_ID_NOT_FOUND, "Group classic is not a consumer group."),
        (E.GROUP_ID_NOT_FOUND, "Group nope not found."),
        (E.INVALID_GROUP_ID, None)]


def test_error_responses_of_multi_group_apis() -> None:
    resp = describe_groups.error_response(DescribeGroupsRequest(groups=["a", "b"]), 5, 15)
    assert [(g.group_id, g.error_code) for g in resp.groups] == [("a", 15), ("b", 15)]
    resp = delete_groups.error_response(DeleteGroupsRequest(groups_names=["a"]), 2, 15)
    assert [(r.group_id, r.error_code) for r in resp.results] == [("a", 15)]
    resp = consumer_group_describe.error_response(
        ConsumerGroupDescribeRequest(group_ids=["a"]), 0, 15)
    assert resp.groups[0].error_code == 15
