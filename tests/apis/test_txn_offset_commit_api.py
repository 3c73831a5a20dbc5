"""The TxnOffsetCommit handler over a fake context: registration and versions, topic
checks before the coordinator, the producer handed to the runtime, whole-request errors
(Kafka merges them with the topic errors), and the KIP-890 transaction verification with
Kafka's error translation per version."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from groupcoord.apis import registry, txn_offset_commit
from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.ids import SequentialIds
from groupcoord.coordinator.result import OpContext
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)


@dataclass
class Info:
    name: str
    topic_id: bytes
    num_partitions: int


T_ID = bytes(range(1, 17))


class Topics:
    def get(self, name: str) -> Info | None:
        return Info("t", T_ID, 2) if name == "t" else None

    def by_id(self, topic_id: bytes) -> Info | None:
        return Info("t", T_ID, 2) if topic_id == T_ID else None


@dataclass
class Groups:
    shard: GroupCoordinatorShard = field(default_factory=lambda: GroupCoordinatorShard(
        0, GroupCoordinatorConfig(), SequentialIds()))
    calls: list[tuple[str, int, int]] = field(default_factory=list)
    fail_with: int | None = None

    async def call_transactional(self, group_id: str, producer_id: int, producer_epoch: int,
                                 op: Any) -> Any:
        self.calls.append((group_id, producer_id, producer_epoch))
        if self.fail_with is not None:
            raise ApiError(self.fail_with)
        result = op(self.shard, OpContext("c", "/h", 1), 1_000)
        for i, rec in enumerate(result.records):
            self.shard.replay(rec, i, producer_id, producer_epoch)
        return result.response


    def partition_for(self, group_id: str) -> int:
        return 7


@dataclass
class Transactions:
    """The transaction coordinator as AddOffsetsToTxn left it: the group's partition is in
    the transaction unless `verify_error` says otherwise."""

    verify_error: int = 0
    verified: list[tuple[str, int, int, list[tuple[str, int]]]] = field(default_factory=list)
    added: list[tuple[str, int, int, list[tuple[str, int]]]] = field(default_factory=list)

    def verify_partitions(self, tid: str, pid: int, epoch: int,
                          partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        self.verified.append((tid, pid, epoch, partitions))
        return dict.fromkeys(partitions, self.verify_error)

    async def add_partitions(self, tid: str, pid: int, epoch: int,
                             partitions: list[tuple[str, int]], client_tv: int = 0) -> int:
        assert client_tv == 2  # only TV2 producers have partitions added implicitly
        self.added.append((tid, pid, epoch, partitions))
        return self.verify_error

    async def verify_at_coordinator(self, tid: str, pid: int, epoch: int, tp: tuple[str, int],
                                    add: bool) -> int:
        """As the coordinator of one node answers a partition leader (KIP-890)."""
        if add:
            return await self.add_partitions(tid, pid, epoch, [tp], 2)
        return self.verify_partitions(tid, pid, epoch, [tp])[tp]


@dataclass
class ProducerState:
    ongoing: set[tuple[int, int]] = field(default_factory=set)

    def has_ongoing(self, pid: int, epoch: int) -> bool:
        return (pid, epoch) in self.ongoing


class Ctx:
    def __init__(self) -> None:
        self.groups = Groups()
        self.topics = Topics()
        self.transactions = Transactions()
        self.offsets_state = ProducerState()
        self.states_asked: list[tuple[str, int]] = []
        self.authorizer = None  # no authorizer: every check passes

    def producer_state(self, topic: str, partition: int) -> ProducerState:
        self.states_asked.append((topic, partition))
        return self.offsets_state


def request(group: str = "g") -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(
        transactional_id="tx", group_id=group, producer_id=42, producer_epoch=3,
        topics=[TxnOffsetCommitRequestTopic(name="t", partitions=[
                    TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=7)
                    for p in (0, 1, 5)]),
                TxnOffsetCommitRequestTopic(name="missing", partitions=[
                    TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])])


def handle(ctx: Ctx, req: TxnOffsetCommitRequest, version: int) -> TxnOffsetCommitResponse:
    resp: TxnOffsetCommitResponse = asyncio.run(txn_offset_commit.handle(ctx, None, req, version))
    return resp


def errors(resp: TxnOffsetCommitResponse) -> list[tuple[str, int, int]]:
    return [(t.name, p.partition_index, p.error_code) for t in resp.topics for p in t.partitions]


def test_registered_with_versions_0_to_6() -> None:
    spec = registry.load_handlers(("txn_offset_commit",))[28]
    assert (spec.min_version, spec.max_version, spec.flexible_min) == (0, 6, 3)
    assert spec.request_cls is TxnOffsetCommitRequest
    assert spec.error_response is txn_offset_commit.error_response


def test_valid_partitions_reach_the_shard_as_the_producer() -> None:
    ctx = Ctx()
    resp = handle(ctx, request(), 3)
    assert errors(resp) == [("t", 0, 0), ("t", 1, 0), ("t", 5, E.UNKNOWN_TOPIC_OR_PARTITION),
                            ("missing", 0, E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert ctx.groups.calls == [("g", 42, 3)]
    # Verified against the coordinator for the group's partition before the write.
    assert ctx.states_asked == [("__consumer_offsets", 7)]
    assert ctx.transactions.verified == [("tx", 42, 3, [("__consumer_offsets", 7)])]
    pending = ctx.groups.shard.offsets.pending.canonical()
    assert sorted(pending[42]) == [("g", "t", 0), ("g", "t", 1)]


def test_empty_group_id_and_whole_request_errors_keep_topic_errors() -> None:
    ctx = Ctx()
    assert errors(handle(ctx, request(group=""), 3)) == [
        ("t", 0, E.INVALID_GROUP_ID), ("t", 1, E.INVALID_GROUP_ID),
        ("t", 5, E.UNKNOWN_TOPIC_OR_PARTITION), ("missing", 0, E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert ctx.groups.calls == []
    ctx.groups.fail_with = E.COORDINATOR_LOAD_IN_PROGRESS
    assert errors(handle(ctx, request(), 2))[:2] == [
        ("t", 0, E.COORDINATOR_LOAD_IN_PROGRESS), ("t", 1, E.COORDINATOR_LOAD_IN_PROGRESS)]
    # v0-1 clients (before KAFKA-7296) get COORDINATOR_NOT_AVAILABLE instead.
    assert errors(handle(ctx, request(), 1))[:2] == [
        ("t", 0, E.COORDINATOR_NOT_AVAILABLE), ("t", 1, E.COORDINATOR_NOT_AVAILABLE)]


def test_error_response_covers_every_partition() -> None:
    resp = txn_offset_commit.error_response(request(), 5, E.GROUP_AUTHORIZATION_FAILED)
    assert errors(resp) == [("t", 0, 30), ("t", 1, 30), ("t", 5, 30), ("missing", 0, 30)]


def test_open_transaction_on_the_partition_skips_verification() -> None:
    ctx = Ctx()
    ctx.offsets_state.ongoing.add((42, 3))
    ctx.transactions.verify_error = E.TRANSACTION_ABORTABLE
    assert errors(handle(ctx, request(), 4))[:2] == [("t", 0, 0), ("t", 1, 0)]
    assert ctx.transactions.verified == []
    # Another epoch of the same producer id has no open transaction: verified, refused.
    ctx.offsets_state.ongoing = {(42, 2)}
    assert errors(handle(ctx, request(), 4))[:2] == [
        ("t", 0, E.TRANSACTION_ABORTABLE), ("t", 1, E.TRANSACTION_ABORTABLE)]
    assert len(ctx.transactions.verified) == 1


def _verification_failure(code: int, version: int) -> list[tuple[str, int, int]]:
    ctx = Ctx()
    ctx.transactions.verify_error = code
    resp = errors(handle(ctx, request(), version))
    assert ctx.groups.calls == []
    assert ctx.groups.shard.offsets.pending.canonical() == {}
    return resp


def test_partition_not_added_is_abortable_from_v4_invalid_txn_state_before() -> None:
    for version in (0, 1, 2, 3):
        assert _verification_failure(E.TRANSACTION_ABORTABLE, version) == [
            ("t", 0, E.INVALID_TXN_STATE), ("t", 1, E.INVALID_TXN_STATE),
            ("t", 5, E.UNKNOWN_TOPIC_OR_PARTITION), ("missing", 0, E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert _verification_failure(E.TRANSACTION_ABORTABLE, 4)[:2] == [
        ("t", 0, E.TRANSACTION_ABORTABLE), ("t", 1, E.TRANSACTION_ABORTABLE)]


def test_fenced_and_unknown_producers() -> None:
    for version in (0, 3, 4):
        assert _verification_failure(E.PRODUCER_FENCED, version)[:2] == [
            ("t", 0, E.INVALID_PRODUCER_EPOCH), ("t", 1, E.INVALID_PRODUCER_EPOCH)]
    assert _verification_failure(E.INVALID_PRODUCER_ID_MAPPING, 3)[:2] == [
        ("t", 0, E.INVALID_PRODUCER_ID_MAPPING), ("t", 1, E.INVALID_PRODUCER_ID_MAPPING)]


def test_retriable_verification_failures_as_handle_operation_exception() -> None:
    cases = [(E.CONCURRENT_TRANSACTIONS, 3, E.CONCURRENT_TRANSACTIONS),
             (E.COORDINATOR_LOAD_IN_PROGRESS, 2, E.COORDINATOR_LOAD_IN_PROGRESS),
             (E.COORDINATOR_LOAD_IN_PROGRESS, 1, E.COORDINATOR_NOT_AVAILABLE),
             (E.COORDINATOR_NOT_AVAILABLE, 4, E.COORDINATOR_NOT_AVAILABLE),
             (E.NOT_COORDINATOR, 4, E.NOT_COORDINATOR),
             (E.NOT_ENOUGH_REPLICAS, 4, E.COORDINATOR_NOT_AVAILABLE),
             (E.REQUEST_TIMED_OUT, 3, E.COORDINATOR_NOT_AVAILABLE),
             (E.NOT_LEADER_OR_FOLLOWER, 3, E.NOT_COORDINATOR),
             (E.KAFKA_STORAGE_ERROR, 3, E.NOT_COORDINATOR),
             (E.MESSAGE_TOO_LARGE, 3, E.UNKNOWN_SERVER_ERROR)]
    for code, version, expected in cases:
        assert _verification_failure(code, version)[:2] == [
            ("t", 0, expected), ("t", 1, expected)], (code, version)


def test_v5_adds_the_partition_instead_of_verifying() -> None:
    ctx = Ctx()
    assert errors(handle(ctx, request(), 5))[:2] == [("t", 0, 0), ("t", 1, 0)]
    assert ctx.transactions.verified == []
    assert ctx.transactions.added == [("tx", 42, 3, [("__consumer_offsets", 7)])]
    assert _verification_failure(E.PRODUCER_FENCED, 5)[:2] == [
        ("t", 0, E.INVALID_PRODUCER_EPOCH), ("t", 1, E.INVALID_PRODUCER_EPOCH)]
    assert _verification_failure(E.CONCURRENT_TRANSACTIONS, 5)[:2] == [
        ("t", 0, E.CONCURRENT_TRANSACTIONS), ("t", 1, E.CONCURRENT_TRANSACTIONS)]


def test_runtime_write_errors_are_translated_too() -> None:
    ctx = Ctx()
    ctx.groups.fail_with = E.NOT_ENOUGH_REPLICAS
    assert errors(handle(ctx, request(), 3))[:2] == [
        ("t", 0, E.COORDINATOR_NOT_AVAILABLE), ("t", 1, E.COORDINATOR_NOT_AVAILABLE)]


def test_v6_names_topics_by_id_and_an_unknown_id_is_unknown_topic_id() -> None:
    """KIP-1319 (`KafkaApis.handleTxnOffsetCommitRequest`, Kafka 4.4): v6 topics are ids,
    resolved to names from the metadata; an id that does not resolve answers
    UNKNOWN_TOPIC_ID on each of its partitions, an unknown partition of a known topic
    UNKNOWN_TOPIC_OR_PARTITION; the answer names topics by id."""
    ctx = Ctx()
    unknown = b"\x09" * 16
    req = TxnOffsetCommitRequest(
        transactional_id="tx", group_id="g", producer_id=42, producer_epoch=3,
        topics=[TxnOffsetCommitRequestTopic(topic_id=T_ID, partitions=[
                    TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=7)
                    for p in (0, 5)]),
                TxnOffsetCommitRequestTopic(topic_id=unknown, partitions=[
                    TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=1)
                    for p in (0, 1)])])
    wire, _ = TxnOffsetCommitRequest.decode(req.encode(6), 0, 6)
    resp = handle(ctx, wire, 6)
    answer, _ = TxnOffsetCommitResponse.decode(resp.encode(6), 0, 6)
    assert [(t.topic_id, p.partition_index, p.error_code)
            for t in answer.topics for p in t.partitions] == [
        (T_ID, 0, 0), (T_ID, 5, E.UNKNOWN_TOPIC_OR_PARTITION),
        (unknown, 0, E.UNKNOWN_TOPIC_ID), (unknown, 1, E.UNKNOWN_TOPIC_ID)]
    # The offset is pending under the topic's name, with its id in the record.
    assert ctx.groups.shard.offsets.has_pending("g", "t", 0)
    # Before v6 an id means nothing: the topic is named.
    assert errors(handle(Ctx(), request(), 5))[0] == ("t", 0, 0)


def test_v6_whole_request_errors_name_topics_by_id() -> None:
    ctx = Ctx()
    req = TxnOffsetCommitRequest(
        transactional_id="tx", group_id="", producer_id=42, producer_epoch=3,
        topics=[TxnOffsetCommitRequestTopic(topic_id=T_ID, partitions=[
            TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=7)])])
    resp = handle(ctx, req, 6)
    answer, _ = TxnOffsetCommitResponse.decode(resp.encode(6), 0, 6)
    assert [(t.topic_id, p.error_code) for t in answer.topics for p in t.partitions] == [
        (T_ID, E.INVALID_GROUP_ID)]
    resp = txn_offset_commit.error_response(req, 6, E.NOT_COORDINATOR)
    assert resp.topics[0].topic_id == T_ID
