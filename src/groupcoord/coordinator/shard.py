"""One `__consumer_offsets` partition's worth of groups and offsets
(`GroupCoordinatorShard` over `GroupMetadataManager` + `OffsetMetadataManager`).

Every method is an operation of the shard's single writer: it takes the request, the
caller (`OpContext`) and the time, and returns a `Result`. Durable state changes only in
`replay`; classic rebalance soft state is changed by the operations themselves, as in
Kafka. `snapshot()` is the canonical durable state used to check replay equivalence.
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.classic import admin
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.manager import ClassicGroups
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.ids import IdSource, SequentialIds
from groupcoord.coordinator.offsets import commit, delete, expiry, fetch_request
from groupcoord.coordinator.offsets.store import OffsetStore
from groupcoord.coordinator.records import group_tombstone, offset_tombstone
from groupcoord.coordinator.result import OpContext, Result
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.delete_groups import DeletableGroupResult

OFFSET_RECORD_TYPES = (0, 1)
GROUP_METADATA_RECORD_TYPE = 2


class GroupCoordinatorShard:
    def __init__(self, partition: int, config: GroupCoordinatorConfig | None = None,
                 ids: IdSource | None = None) -> None:
        self.partition = partition
        self.config = config or GroupCoordinatorConfig()
        # Tests may omit the id source; the server always injects a random one.
        self.ids: IdSource = ids or SequentialIds()
        self.classic = ClassicGroups(self.config, self.ids)
        self.offsets = OffsetStore()
        # False while the log is being replayed at start-up; set by on_loaded.
        self.live = False
        # The time of the latest operation: replay has no clock of its own.
        self.last_now_ms = -1

    def _fx(self, now_ms: int) -> Effects:
        self.last_now_ms = now_ms
        return Effects(self.config, now_ms)

    # -- replay: the one mutation path of durable state ------------------------------
    def replay(self, record: Any) -> None:
        key, value = record.key, record.value
        record_type = key.RECORD_TYPE
        if record_type in OFFSET_RECORD_TYPES:
            self.offsets.replay(key.group, key.topic, key.partition, value)
            if value is not None:
                self.classic.ensure_simple_group(key.group)
        elif record_type == GROUP_METADATA_RECORD_TYPE:
            self.classic.replay_group_metadata(key.group, value, self.live, self.last_now_ms)
        # Other record types belong to other group kinds; the loader skips them here.

    def on_loaded(self, now_ms: int) -> Result:
        self.last_now_ms = now_ms
        self.live = True
        # The runtime drives the periodic `cleanup_expired_offsets` itself.
        return self.classic.on_loaded(now_ms)

    # -- classic group RPCs ------------------------------------------------------------
    def join_group(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        self.last_now_ms = now_ms
        return self.classic.join_group(request, version, ctx, now_ms)

    def sync_group(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        self.last_now_ms = now_ms
        return self.classic.sync_group(request, version, ctx, now_ms)

    def heartbeat(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        self.last_now_ms = now_ms
        return self.classic.heartbeat(request, version, ctx, now_ms)

    def leave_group(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        self.last_now_ms = now_ms
        return self.classic.leave_group(request, version, ctx, now_ms)

    # -- offsets -------------------------------------------------------------------------
    def offset_commit(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        return commit.offset_commit(self.classic, request, version, self._fx(now_ms))

    def offset_fetch(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        self.last_now_ms = now_ms
        return Result(response=fetch_request.offset_fetch(self, request, version))

    def offset_delete(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        fx = self._fx(now_ms)
        group = self.classic.get(request.group_id)
        error = delete.validate_offset_delete(group)
        if error != ErrorCode.NONE:
            return fx.result(fetch_request.offset_delete_response(error, []))
        assert group is not None
        topics = [(t.name, [p.partition_index for p in t.partitions]) for t in request.topics]
        result = delete.delete_offsets(self.offsets, group, topics, fx.records)
        return fx.result(fetch_request.offset_delete_response(ErrorCode.NONE, result))

    # -- admin -----------------------------------------------------------------------------
    def describe_group(self, group_id: str, version: int = 6) -> Result:
        return Result(response=admin.describe(self.classic.get(group_id), group_id, version))

    def list_groups(self, states: list[str] | None = None,
                    types: list[str] | None = None) -> Result:
        groups = [self.classic.groups[g] for g in sorted(self.classic.groups)]
        return Result(response=admin.list_groups(groups, states or [], types or []))

    def delete_groups(self, group_ids: list[str], now_ms: int | None = None) -> Result:
        fx = self._fx(self.last_now_ms if now_ms is None else now_ms)
        results = []
        for group_id in group_ids:
            error = admin.validate_delete(self.classic.get(group_id))
            if error == ErrorCode.NONE:
                self._delete_group_records(group_id, fx.records)
                fx.event(group_id, "group_deleted", self.classic.groups[group_id].generation_id,
                         reason="DeleteGroups request")
            results.append(DeletableGroupResult(group_id=group_id, error_code=int(error)))
        return fx.result(results)

    def _delete_group_records(self, group_id: str, records: list[Any]) -> None:
        for topic, parts in sorted(self.offsets.group(group_id).items()):
            for partition in sorted(parts):
                records.append(offset_tombstone(group_id, topic, partition))
        records.append(group_tombstone(group_id))

    # -- timers and retention ------------------------------------------------------------
    def on_timer(self, key: tuple, now_ms: int) -> Result:
        self.last_now_ms = now_ms
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
        return fx.result()

    def on_client_disconnect(self, reply_tokens: list[int]) -> Result:
        # Kafka keeps a disconnected member until its session expires; replies to the
        # closed connection are dropped by the runtime.
        return Result()

    # -- canonical durable state ---------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return {
            "groups": {g: grp.persisted for g, grp in sorted(self.classic.groups.items())},
            "offsets": self.offsets.canonical(),
        }
