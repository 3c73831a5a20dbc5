"""A manual-clock harness with a log that has offsets, producers and markers.

Like the server runtime: every operation's records form one batch at the next log
offsets (a transactional batch when the operation is a TxnOffsetCommit), a transaction
marker takes one offset of its own, and `fresh_replay` rebuilds a shard from the real
bytes of that log through the server's loader (`shard_log.replay_log`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from coord_harness import GROUP, Harness

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.ids import SequentialIds
from groupcoord.coordinator.result import OpContext, Result
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.logformat.batch import set_base_offset
from groupcoord.server.runtime.shard_log import (
    ProducerEpochs,
    encode_end_txn_marker,
    encode_records_batch,
    replay_log,
)
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)
from groupcoord.wire.generated.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)


def tid(name: str) -> bytes:
    return name.encode().ljust(16, b"\x00")[:16]


class ListLog:
    """The part of `PartitionLog` the loader uses: whole batches in offset order."""

    def __init__(self, batches: list[bytes]) -> None:
        self.batches = batches

    def iter_batches(self) -> Iterator[memoryview]:
        return (memoryview(b) for b in self.batches)


class TxnHarness(Harness):
    def __init__(self, config: GroupCoordinatorConfig | None = None,
                 topics: dict[str, int] | None = None, now_ms: int = 1_000_000) -> None:
        self.batches: list[bytes] = []
        self.next_offset = 0
        self._txn: tuple[int, int] | None = None
        # Consumer groups compute each target at once (no assignment interval), as in
        # the consumer-group harness: these tests follow every rebalance step.
        super().__init__(config or GroupCoordinatorConfig(group_consumer_assignment_interval_ms=0),
                         now_ms)
        if topics:
            image = TopicsImage.of([(n, tid(n), c) for n, c in topics.items()], 1)
            self.apply(self.shard.on_topics_changed(image, self.now))

    # -- runtime -----------------------------------------------------------------------
    def apply(self, result: Result) -> Result:
        records = list(result.records)
        result.records.clear()
        super().apply(result)  # timers, replies and events; records replayed below
        if records:
            pid, epoch = self._txn if self._txn is not None else (-1, -1)
            batch = bytearray(encode_records_batch(records, self.now, pid, epoch))
            set_base_offset(batch, 0, self.next_offset)
            self.batches.append(bytes(batch))
            for index, rec in enumerate(records):
                self.log.append(rec)
                self.shard.replay(rec, self.next_offset + index, pid, epoch)
            self.next_offset += len(records)
        result.records.extend(records)
        return result

    def marker(self, producer_id: int, commit: bool, producer_epoch: int = 0,
               coordinator_epoch: int = 0) -> None:
        batch = bytearray(encode_end_txn_marker(producer_id, producer_epoch,
                                                coordinator_epoch, commit, self.now))
        set_base_offset(batch, 0, self.next_offset)
        self.batches.append(bytes(batch))
        self.next_offset += 1
        self.shard.replay_end_transaction_marker(producer_id, producer_epoch, commit)

    def fresh_replay(self) -> GroupCoordinatorShard:
        other = GroupCoordinatorShard(0, self.config, SequentialIds())
        replay_log(ListLog(self.batches), other, ProducerEpochs())
        return other

    # -- requests ----------------------------------------------------------------------
    def txn_commit(self, offsets: dict[tuple[str, int], int], producer_id: int = 1,
                   producer_epoch: int = 0, member_id: str = "", generation: int = -1,
                   instance_id: str | None = None, version: int = 5, group_id: str = GROUP,
                   metadata: str | None = "", leader_epoch: int = -1) -> Any:
        by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
        for (t, p), off in offsets.items():
            by_topic.setdefault(t, []).append(TxnOffsetCommitRequestPartition(
                partition_index=p, committed_offset=off, committed_leader_epoch=leader_epoch,
                committed_metadata=metadata))
        req = TxnOffsetCommitRequest(
            transactional_id="tx", group_id=group_id, producer_id=producer_id,
            producer_epoch=producer_epoch, generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            topics=[TxnOffsetCommitRequestTopic(name=t, partitions=ps)
                    for t, ps in by_topic.items()])
        result = self.shard.txn_offset_commit(req, version, OpContext("p", "/h", 0), self.now)
        self._txn = (producer_id, producer_epoch)
        try:
            self.apply(result)
        finally:
            self._txn = None
        return result

    def txn_errors(self, *args: Any, **kw: Any) -> dict[tuple[str, int], int]:
        resp = self.txn_commit(*args, **kw).response
        return {(t.name, p.partition_index): p.error_code
                for t in resp.topics for p in t.partitions}

    def hb(self, member_id: str, epoch: int, group_id: str = GROUP,
           topics: list[str] | None = None,
           owned: dict[str, list[int]] | None = None) -> Any:
        """A KIP-848 heartbeat (v1, client-generated member id)."""
        if epoch == 0 and owned is None:
            owned = {}
        req = ConsumerGroupHeartbeatRequest(
            group_id=group_id, member_id=member_id, member_epoch=epoch,
            rebalance_timeout_ms=30_000 if epoch == 0 else -1,
            subscribed_topic_names=(topics or ["foo"]) if epoch == 0 else None,
            topic_partitions=None if owned is None else [
                TopicPartitions(topic_id=tid(t), partitions=ps) for t, ps in owned.items()])
        _token, result = self.call("consumer_group_heartbeat", req, 1)
        return result.response

    @staticmethod
    def assigned(resp: Any) -> dict[str, list[int]]:
        if resp.assignment is None:
            return {}
        return {bytes(tp.topic_id).rstrip(b"\x00").decode(): sorted(tp.partitions)
                for tp in resp.assignment.topic_partitions}
