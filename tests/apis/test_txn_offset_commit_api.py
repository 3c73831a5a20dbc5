"""The TxnOffsetCommit handler over a fake context: registration and versions, topic
checks before the coordinator, the producer handed to the runtime, and whole-request
errors (Kafka merges them with the topic errors)."""

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


class Topics:
    def get(self, name: str) -> Info | None:
        return Info("t", bytes(16), 2) if name == "t" else None

    def by_id(self, topic_id: bytes) -> Info | None:
        return None


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


class Ctx:
    def __init__(self) -> None:
        self.groups = Groups()
        self.topics = Topics()


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


def test_registered_with_versions_0_to_5() -> None:
    spec = registry.load_handlers(("txn_offset_commit",))[28]
    assert (spec.min_version, spec.max_version, spec.flexible_min) == (0, 5, 3)
    assert spec.request_cls is TxnOffsetCommitRequest
    assert spec.error_response is txn_offset_commit.error_response


def test_valid_partitions_reach_the_shard_as_the_producer() -> None:
    ctx = Ctx()
    resp = handle(ctx, request(), 3)
    assert errors(resp) == [("t", 0, 0), ("t", 1, 0), ("t", 5, E.UNKNOWN_TOPIC_OR_PARTITION),
                            ("missing", 0, E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert ctx.groups.calls == [("g", 42, 3)]
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
