"""The `Shard` every coordinator runtime hosts, and one `__consumer_offsets` partition's worth of groups and offsets
(`GroupCoordinatorShard` over `GroupMetadataManager` + `OffsetMetadataManager`): classic
groups, KIP-848 consumer groups (record types 3-8 and 16), KIP-1071 streams groups
(17, 19-23) and committed offsets.

Every method is an operation of the shard's single writer: it takes the request, the
caller (`OpContext`) and the time, and returns a `Result`. Durable state changes only in
`replay`; classic rebalance soft state is changed by the operations themselves, as in
Kafka. `snapshot()` is the canonical durable state used to check replay equivalence.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, ClassVar

from groupcoord.coordinator.classic import admin
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.consumer import migration
from groupcoord.coordinator.consumer import timers as consumer_timers
from groupcoord.coordinator.consumer.manager import RECORD_TYPES as CONSUMER_RECORD_TYPES
from groupcoord.coordinator.ids import IdSource
from groupcoord.coordinator.offsets import (
    commit,
    delete,
    expiry,
    fetch_request,
    member_epoch,
    txn_commit,
)
from groupcoord.coordinator.offsets.store import NO_PRODUCER_ID
from groupcoord.coordinator.records import group_tombstone, offset_tombstone
from groupcoord.coordinator.result import OpContext, Result
from groupcoord.coordinator.shard_groups import ShardGroups
from groupcoord.coordinator.share import shard_ops as share_ops
from groupcoord.coordinator.share.manager import SESSION_TIMER as SHARE_SESSION_TIMER
from groupcoord.coordinator.share.records import RECORD_TYPES as SHARE_RECORD_TYPES
from groupcoord.coordinator.stats import CoordinatorStats
from groupcoord.coordinator.streams import shard_ops as streams_ops
from groupcoord.coordinator.streams import timers as streams_timers
from groupcoord.coordinator.streams.manager import RECORD_TYPES as STREAMS_RECORD_TYPES
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.logformat.coordinator_records import GROUP, RecordTypes, decode_record
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from groupcoord.wire.generated.delete_groups import DeletableGroupResult

OFFSET_RECORD_TYPES = (0, 1)
GROUP_METADATA_RECORD_TYPE = 2


class Shard(ABC):
    """What the generic runtime (`server.runtime.shard_task`) runs: Kafka's `CoordinatorShard`.

    Operations are callables the runtime applies to the shard; each returns a `Result`
    (or None: nothing to do). `replay` is the one mutation path of durable state, used
    live after an append and at load. The hooks below default to "nothing to do", so a
    shard implements only the ones its kind needs."""

    # The record schemas of the shard's topic (what the loader decodes with).
    record_types: ClassVar[RecordTypes] = GROUP
    # Whether the runtime calls `cleanup_expired_offsets` periodically.
    periodic_cleanup: ClassVar[bool] = False

    @abstractmethod
    def replay(self, record: Any, offset: int = -1, producer_id: int = NO_PRODUCER_ID,
               producer_epoch: int = -1) -> None:
        """Apply one record at log `offset`, written by `producer_id`/`producer_epoch`."""

    def decode(self, key: bytes, value: bytes | None) -> Any:
        """One stored record as `replay` takes it (ValueError: not ours, skipped)."""
        return decode_record(key, value, self.record_types)

    def replay_end_transaction_marker(self, producer_id: int, producer_epoch: int,
                                      commit: bool) -> None:
        """A COMMIT/ABORT control marker of `producer_id` was written to the partition."""

    def on_loaded(self, now_ms: int) -> Result | None:
        """The replay ended: re-derive soft state (timers) from the loaded state."""
        return None

    def on_unloaded(self) -> None:
        """The shard was resigned; its state is dropped after this."""

    def on_timer(self, key: tuple[Any, ...], now_ms: int) -> Result | None:
        """A keyed timer the shard scheduled fired."""
        return None

    def on_topics_changed(self, image: TopicsImage, now_ms: int) -> Result | None:
        """The broker's topics changed (or were loaded)."""
        return None

    def on_client_disconnect(self, reply_tokens: list[int]) -> Result | None:
        """Parked requests of these reply tokens were cancelled by their callers."""
        return None

    def cleanup_expired_offsets(self, now_ms: int) -> Result | None:
        """The periodic clean-up (only when `periodic_cleanup`)."""
        return None


class GroupCoordinatorShard(ShardGroups, Shard):
    periodic_cleanup = True

    def __init__(self, partition: int, config: GroupCoordinatorConfig | None = None,
                 ids: IdSource | None = None, stats: CoordinatorStats | None = None) -> None:
        super().__init__(config, ids)
        self.partition = partition
        # Shared by the runtime's shards (`coordinator.stats`); a shard of its own in tests.
        self.stats = stats if stats is not None else CoordinatorStats()
        # False while the log is being replayed at start-up; set by on_loaded.
        self.live = False
        # The time of the latest operation: replay has no clock of its own.
        self.last_now_ms = -1

    def _fx(self, now_ms: int) -> Effects:
        self.last_now_ms = now_ms
        return Effects(self.config, now_ms)

    # -- replay: the one mutation path of durable state ------------------------------
    def replay(self, record: Any, offset: int = -1, producer_id: int = NO_PRODUCER_ID,
               producer_epoch: int = -1) -> None:
        """`GroupCoordinatorShard.replay`: `offset` is the record's log offset and
        `producer_id`/`producer_epoch` those of its batch (-1: not transactional)."""
        key, value = record.key, record.value
        record_type = key.RECORD_TYPE
        if record_type in OFFSET_RECORD_TYPES:
            self.offsets.replay(key.group, key.topic, key.partition, value, producer_id, offset)
            if value is not None and key.group not in self.consumer.groups \
                    and key.group not in self.streams.groups:
                self.classic.ensure_simple_group(key.group)
        elif record_type == GROUP_METADATA_RECORD_TYPE:
            self.classic.replay_group_metadata(key.group, value, self.live, self.last_now_ms)
        elif record_type in CONSUMER_RECORD_TYPES:
            self.consumer.replay(key, value)
        elif record_type in SHARE_RECORD_TYPES:
            self.share.replay(key, value, self.last_now_ms)
        elif record_type in STREAMS_RECORD_TYPES:
            if value is not None and key.group_id not in self.streams.groups:
                # A simple classic group (offsets only) is replaced, as in Kafka.
                self.classic.groups.pop(key.group_id, None)
            self.streams.replay(key, value)
        # Other record types belong to other group kinds; the loader skips them here.

    def replay_end_transaction_marker(self, producer_id: int, producer_epoch: int,
                                      commit: bool) -> None:
        """A COMMIT (`commit`) or ABORT control marker of `producer_id` was written."""
        self.offsets.replay_end_transaction_marker(producer_id, commit)

    def on_loaded(self, now_ms: int) -> Result:
        self.last_now_ms = now_ms
        self.live = True
        # The runtime drives the periodic `cleanup_expired_offsets` itself.
        result = self.classic.on_loaded(now_ms)
        result.timers.extend(self.consumer.on_loaded(now_ms).timers)
        result.timers.extend(self.share.on_loaded(now_ms).timers)
        result.timers.extend(self.streams.on_loaded(now_ms).timers)
        return result

    def on_topics_changed(self, image: TopicsImage, now_ms: int) -> Result:
        """The runtime's topics image changed (or was loaded): input, not durable state."""
        self.consumer.on_topics_changed(image)
        self.share.on_topics_changed(image)
        self.streams.on_topics_changed(image)
        return Result()

    # -- consumer group RPCs -----------------------------------------------------------
    def consumer_group_heartbeat(self, request: Any, version: int, ctx: OpContext,
                                 now_ms: int, overrides: Mapping[str, str] | None = None
                                 ) -> Result:
        self.last_now_ms = now_ms
        if request.group_id in self.share.groups or request.group_id in self.streams.groups:
            return Result(response=ConsumerGroupHeartbeatResponse(
                error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                error_message=f"Group {request.group_id} is not a consumer group."))
        return self.consumer.consumer_group_heartbeat(request, version, ctx, now_ms, overrides)

    def consumer_group_describe(self, group_id: str, version: int = 1) -> Result:
        return Result(response=self.consumer.describe(group_id, version, False))

    # -- streams group RPCs (KIP-1071) --------------------------------------------------
    def streams_group_heartbeat(self, request: Any, version: int, ctx: OpContext,
                                now_ms: int, overrides: Mapping[str, str] | None = None
                                ) -> Result:
        self.last_now_ms = now_ms
        return streams_ops.heartbeat(self, request, version, ctx, now_ms, overrides)

    def streams_group_describe(self, group_id: str) -> Result:
        return streams_ops.describe(self, group_id)

    # -- classic group RPCs ------------------------------------------------------------
    def join_group(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        self.last_now_ms = now_ms
        if request.group_id in self.streams.groups:
            return streams_ops.classic_join(self, request, version, ctx, now_ms)
        consumer = self.consumer.get(request.group_id)
        if consumer is not None and consumer.members:
            return migration.join_group(self, request, version, ctx, now_ms)
        if consumer is not None:
            # An empty consumer group becomes a classic group (always allowed when empty).
            tombstones: list[Any] = []
            self.consumer.delete_records(consumer, tombstones)
            result = self.classic.join_group(request, version, ctx, now_ms)
            result.records[:0] = tombstones
            return result
        return self.classic.join_group(request, version, ctx, now_ms)

    def sync_group(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        return self._classic_rpc(migration.sync_group, self.classic.sync_group, request,
                                 version, ctx, now_ms)

    def heartbeat(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        return self._classic_rpc(migration.heartbeat, self.classic.heartbeat, request, version,
                                 ctx, now_ms)

    def leave_group(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        return self._classic_rpc(migration.leave_group, self.classic.leave_group, request,
                                 version, ctx, now_ms)

    def _classic_rpc(self, in_consumer_group: Callable[[Any, Any, int, OpContext, int], Result],
                     in_classic_group: Callable[[Any, int, OpContext, int], Result],
                     request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        """A classic-protocol RPC goes to the consumer group of its group id (a classic
        member inside it), else to the classic groups."""
        self.last_now_ms = now_ms
        if request.group_id in self.consumer.groups:
            return in_consumer_group(self, request, version, ctx, now_ms)
        return in_classic_group(request, version, ctx, now_ms)

    # -- offsets -------------------------------------------------------------------------
    def offset_commit(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        result = self._offset_commit(request, version, now_ms)
        self.stats.offset_commits += len(result.records)
        return result

    def _offset_commit(self, request: Any, version: int, now_ms: int) -> Result:
        fx = self._fx(now_ms)
        streams = self.streams.groups.get(request.group_id)
        if streams is not None:
            verdict = streams_ops.commit_verdict(
                self, streams, request.member_id or "", request.group_instance_id,
                request.generation_id_or_member_epoch, version, False)
            return commit.offset_commit(self.classic, request, version, fx, verdict,
                                        self.streams.image.topic_id)
        group = self.consumer.get(request.group_id)
        if group is None:
            return commit.offset_commit(self.classic, request, version, fx)
        verdict = member_epoch.validate_commit(group, request.member_id or "",
                                               request.generation_id_or_member_epoch, version)
        result = commit.offset_commit(self.classic, request, version, fx, verdict,
                                      self.consumer.image.topic_id)
        if verdict[0] == ErrorCode.NONE and request.member_id in group.members:
            # A commit keeps a classic member's session alive, as a heartbeat would.
            member = group.members[request.member_id]
            if member.classic is not None:
                consumer_timers.schedule_session(self.consumer, group.group_id, member, fx)
        return result

    def txn_offset_commit(self, request: Any, version: int, ctx: OpContext,
                          now_ms: int) -> Result:
        """TxnOffsetCommit; the runtime writes the records in the producer's
        transactional batch (`CoordinatorRuntime.call_transactional`)."""
        fx = self._fx(now_ms)
        member_id, instance_id = request.member_id or "", request.group_instance_id
        generation = request.generation_id_or_member_epoch
        consumer = self.consumer.get(request.group_id)
        streams = self.streams.groups.get(request.group_id)
        if streams is not None:
            verdict = streams_ops.commit_verdict(self, streams, member_id, instance_id,
                                                 generation, version, True)
        elif consumer is not None:
            verdict = txn_commit.validate_consumer(consumer, member_id, instance_id, generation,
                                                   version)
        elif request.group_id in self.share.groups:
            # `ShareGroup.validateOffsetCommit`: GROUP_ID_NOT_FOUND, at every version.
            verdict = (ErrorCode.GROUP_ID_NOT_FOUND, None)
        else:
            group = self.classic.get(request.group_id)
            verdict = (txn_commit.validate_classic(group, member_id, instance_id, generation,
                                                   version), None)
        result = txn_commit.txn_offset_commit(request, version, fx, verdict,
                                              self.consumer.image.topic_id)
        self.stats.offset_commits += len(result.records)
        return result

    def offset_fetch(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        self.last_now_ms = now_ms
        return Result(response=fetch_request.offset_fetch(self, request, version))

    def offset_delete(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        result = self._offset_delete(request, now_ms)
        self.stats.offset_deletions += len(result.records)
        return result

    def _offset_delete(self, request: Any, now_ms: int) -> Result:
        fx = self._fx(now_ms)
        if request.group_id in self.consumer.groups:
            return self._consumer_offset_delete(request, fx)
        group = self.classic.get(request.group_id)
        error = delete.validate_offset_delete(group)
        if error != ErrorCode.NONE:
            return fx.result(fetch_request.offset_delete_response(error, []))
        assert group is not None
        topics = [(t.name, [p.partition_index for p in t.partitions]) for t in request.topics]
        result = delete.delete_offsets(self.offsets, group, topics, fx.records)
        return fx.result(fetch_request.offset_delete_response(ErrorCode.NONE, result))

    def _consumer_offset_delete(self, request: Any, fx: Any) -> Result:
        group = self.consumer.groups[request.group_id]
        subscribed = group.subscribed_topic_names()
        result = []
        for t in request.topics:
            parts = [p.partition_index for p in t.partitions]
            if t.name in subscribed:
                result.append((t.name, [(p, int(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
                                        for p in parts]))
                continue
            for p in parts:
                if self.offsets.get(request.group_id, t.name, p) is not None \
                        or self.offsets.has_pending(request.group_id, t.name, p):
                    fx.records.append(offset_tombstone(request.group_id, t.name, p))
            result.append((t.name, [(p, 0) for p in parts]))
        return fx.result(fetch_request.offset_delete_response(ErrorCode.NONE, result))

    # -- admin -----------------------------------------------------------------------------
    def describe_group(self, group_id: str, version: int = 6) -> Result:
        described = admin.describe(self.classic.get(group_id), group_id, version)
        if (group_id in self.consumer.groups or group_id in self.streams.groups) \
                and described.error_code:
            # DescribeGroups serves classic groups only (`GroupMetadataManager.describeGroups`).
            described.error_message = f"Group {group_id} is not a classic group."
        return Result(response=described)

    def list_groups(self, states: list[str] | None = None,
                    types: list[str] | None = None) -> Result:
        groups = [self.classic.groups[g] for g in sorted(self.classic.groups)]
        listed = admin.list_groups(groups, states or [], types or [])
        wanted_states = {s.strip().lower() for s in states or []}
        wanted_types = {t.strip().lower() for t in types or []}
        listed.extend(self.consumer.list_groups(wanted_states, wanted_types))
        listed.extend(self.share.list_groups(wanted_states, wanted_types))
        listed.extend(self.streams.list_groups(wanted_states, wanted_types))
        listed.sort(key=lambda g: g.group_id)
        return Result(response=listed)

    def delete_groups(self, group_ids: list[str], now_ms: int | None = None) -> Result:
        fx = self._fx(self.last_now_ms if now_ms is None else now_ms)
        results = []
        for group_id in group_ids:
            if group_id in self.share.groups:
                results.append(share_ops.delete_group(self, group_id, fx))
                continue
            streams = self.streams.groups.get(group_id)
            if streams is not None:
                results.append(streams_ops.delete_group(self, streams, fx))
                continue
            consumer = self.consumer.get(group_id)
            if consumer is not None:
                error = self.consumer.validate_delete(consumer)
                if error == ErrorCode.NONE:
                    self.delete_offsets(group_id, fx.records)
                    self.consumer.delete_records(consumer, fx.records)
                    fx.event(group_id, "group_deleted", consumer.group_epoch,
                             reason="DeleteGroups request")
                results.append(DeletableGroupResult(group_id=group_id, error_code=int(error)))
                continue
            error = admin.validate_delete(self.classic.get(group_id))
            if error == ErrorCode.NONE:
                self._delete_group_records(group_id, fx.records)
                fx.event(group_id, "group_deleted", self.classic.groups[group_id].generation_id,
                         reason="DeleteGroups request")
            results.append(DeletableGroupResult(group_id=group_id, error_code=int(error)))
        return fx.result(results)

    def _delete_group_records(self, group_id: str, records: list[Any]) -> None:
        self.delete_offsets(group_id, records)
        records.append(group_tombstone(group_id))

    # -- timers and retention ------------------------------------------------------------
    def on_timer(self, key: tuple, now_ms: int) -> Result:
        self.last_now_ms = now_ms
        if key[0] == SHARE_SESSION_TIMER:
            return self.share.on_timer(key, now_ms)
        if key[0] in streams_timers.KINDS:
            return self.streams.on_timer(key, now_ms)
        if key[0] in consumer_timers.KINDS:
            return self.consumer.on_timer(key, now_ms)
        if key[0] in migration.TIMER_KINDS:
            return migration.on_timer(self, key, now_ms)
        return self.classic.on_timer(key, now_ms)

    def cleanup_expired_offsets(self, now_ms: int) -> Result:
        fx = self._fx(now_ms)
        retention = self.config.offsets_retention_ms
        for group_id in sorted(self.classic.groups):
            group = self.classic.groups[group_id]
            before = len(fx.records)
            all_expired = expiry.cleanup_group(self.offsets, group, now_ms, retention, fx.records)
            if len(fx.records) > before:
                fx.event(group_id, "offsets_expired", group.generation_id,
                         partitions=len(fx.records) - before)
            # Kafka would also delete an Empty group holding MEMBER_ID_REQUIRED members;
            # keeping it until they join or expire spares them a failed second join.
            if all_expired and group.is_in(ClassicGroupState.EMPTY) \
                    and not group.pending_join_members:
                fx.records.append(group_tombstone(group_id))
                fx.event(group_id, "group_deleted", group.generation_id,
                         reason="empty group with no offsets left")
        self._cleanup_consumer_groups(fx, retention)
        streams_ops.cleanup_expired_offsets(self, fx, retention)
        return fx.result()

    def _cleanup_consumer_groups(self, fx: Effects, retention: int) -> None:
        for group_id in sorted(self.consumer.groups):
            group = self.consumer.groups[group_id]
            expiry.cleanup_modern_group(
                self.offsets, group_id, group.group_epoch, group.subscribed_topic_names(),
                bool(group.members), partial(self.consumer.delete_records, group), fx,
                retention)

    def on_client_disconnect(self, reply_tokens: list[int]) -> Result:
        # Kafka keeps a disconnected member until its session expires; replies to the
        # closed connection are dropped by the runtime.
        return Result()

    # -- canonical durable state ---------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        snap = {
            "groups": {g: grp.persisted for g, grp in sorted(self.classic.groups.items())},
            "offsets": self.offsets.canonical(),
        }
        if self.offsets.pending.by_producer:
            snap["pending"] = self.offsets.pending.canonical()
        if self.consumer.groups:
            snap["consumer"] = self.consumer.canonical()
        if self.share.groups:
            snap["share"] = self.share.canonical()
        if self.streams.groups:
            snap["streams"] = self.streams.canonical()
        return snap

    # -- share groups (KIP-932) ------------------------------------------------------------
    def share_group_heartbeat(self, request: Any, version: int, ctx: OpContext, now_ms: int,
                              image: TopicsImage | None = None,
                              overrides: dict[str, str] | None = None) -> Result:
        self.last_now_ms = now_ms
        return share_ops.heartbeat(self, request, version, ctx, now_ms, image, overrides)

    def share_group_describe(self, group_id: str, version: int = 1) -> Result:
        return Result(response=share_ops.describe(self, group_id))
