"""The consumer groups of one shard: RPC entry points, replay, timers, loading
(the consumer half of Kafka's `GroupMetadataManager`).

`replay` is the one mutation path of durable consumer-group state. Soft state kept here:
the topics image (input from the runtime) and the version of the last image that created
topics (`lastMetadataImageWithNewTopics`), the epochs rebalance timers were armed at, the
pending regex refreshes (Kafka's executor tasks), and the per-group "metadata refresh
needed" flags.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator import modern_groups
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.manager import ClassicGroups
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.consumer import (
    describe,
    group_config,
    membership,
    regex_refresh,
    timers,
)
from groupcoord.coordinator.consumer import records as rec
from groupcoord.coordinator.consumer.errors import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    HeartbeatError,
    error_response,
    validate,
)
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.group_config import ConsumerGroupSettings
from groupcoord.coordinator.consumer.heartbeat import join_or_heartbeat
from groupcoord.coordinator.consumer.state import MemberState
from groupcoord.coordinator.ids import IdSource
from groupcoord.coordinator.result import OpContext, Result
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.errors import ErrorCode

# Record types of consumer groups in `__consumer_offsets`.
METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, REGEX = 6, 7, 8, 16
RECORD_TYPES = frozenset({3, 4, 5, 6, 7, 8, 16})



@dataclass(frozen=True, slots=True)
class Migration:
    """Online migration between the protocols (`conversion`, which builds on this module,
    so the shard passes its functions in). `upgrade`: a consumer-protocol join meets a
    classic group; the records converting it go to the effects, and the scratch consumer
    group the join runs against is returned (None: a new group). `downgrade`: after a fence
    whose records are in the effects, the group may become a classic one."""

    upgrade: Callable[[ConsumerGroups, ClassicGroup, Effects], ConsumerGroup | None]
    downgrade: Callable[[ConsumerGroups, ConsumerGroup, Effects], None]


class ConsumerGroups:
    def __init__(self, config: GroupCoordinatorConfig, ids: IdSource, classic: ClassicGroups,
                 migration: Migration) -> None:
        self.config = config
        self.ids = ids
        self.classic = classic
        self._migration = migration
        self.groups: dict[str, ConsumerGroup] = {}
        self.image = TopicsImage()
        self.last_image_with_new_topics = 0
        self.rebalance_epochs: dict[tuple[str, str], int] = {}
        # group id -> the regexes its pending refresh will resolve.
        self.regex_refreshes: dict[str, frozenset[str]] = {}
        # Offloaded target computations in flight (`target_offload`): group -> group epoch.
        self.targets_in_flight: dict[str, int] = {}
        # group id -> what the principal that armed the refresh may describe (None: all).
        self.regex_topic_filters: dict[str, Callable[[Iterable[str]], set[str]] | None] = {}
        # Groups with `consumer.*` overrides (GroupConfigManager's view), as the last
        # heartbeat brought them; soft state, like the timers that use it.
        self.group_settings: dict[str, ConsumerGroupSettings] = {}

    def get(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    # -- ConsumerGroupHeartbeat --------------------------------------------------------------
    def consumer_group_heartbeat(self, request: Any, version: int, ctx: OpContext,
                                 now_ms: int, overrides: Mapping[str, str] | None = None
                                 ) -> Result:
        """`overrides`: the group's dynamic configs (None keeps what was last given)."""
        fx = Effects(self.config, now_ms)
        if overrides is not None:
            self._set_overrides(request.group_id, overrides)
        try:
            validate(request, version, self.config)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                response = membership.leave(self, request, fx)
            else:
                group = self._group_for_join(request, fx)
                response = join_or_heartbeat(self, group, request, ctx, fx)
        except HeartbeatError as exc:
            # Nothing of a failed heartbeat is written (Kafka throws before its records).
            return Result(response=error_response(exc))
        return fx.result(response)

    def _set_overrides(self, group_id: str, overrides: Mapping[str, str]) -> None:
        current = group_config.settings(self.config, overrides)
        if current == group_config.settings(self.config, None):
            self.group_settings.pop(group_id, None)
        else:
            self.group_settings[group_id] = current

    def session_timeout_ms(self, group_id: str) -> int:
        """`GroupMetadataManager.consumerGroupSessionTimeoutMs`."""
        found = self.group_settings.get(group_id)
        return found.session_timeout_ms if found else self.config.group_consumer_session_timeout_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """`GroupMetadataManager.consumerGroupHeartbeatIntervalMs`."""
        found = self.group_settings.get(group_id)
        if found is not None:
            return found.heartbeat_interval_ms
        return self.config.group_consumer_heartbeat_interval_ms

    def assignment_interval_ms(self, group_id: str) -> int:
        """`GroupMetadataManager.consumerGroupAssignmentIntervalMs` (KIP-1263)."""
        found = self.group_settings.get(group_id)
        if found is not None:
            return found.assignment_interval_ms
        return self.config.group_consumer_assignment_interval_ms

    def _group_for_join(self, request: Any, fx: Effects) -> ConsumerGroup:
        group_id = request.group_id
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if request.member_epoch != 0:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        classic = self.classic.get(group_id)
        if classic is not None:
            converted = self._migration.upgrade(self, classic, fx)
            if converted is not None:
                return converted
        # A new group exists for this operation only; replaying its records creates it.
        return ConsumerGroup(group_id)

    def after_fence(self, group: ConsumerGroup, fx: Effects) -> None:
        self._migration.downgrade(self, group, fx)

    # -- replay ------------------------------------------------------------------------------
    def replay(self, key: Any, value: Any) -> None:
        record_type = key.RECORD_TYPE
        group_id = key.group_id
        group = self.groups.get(group_id)
        if group is None:
            if value is None:
                return
            group = self.groups[group_id] = ConsumerGroup(group_id)
            # A simple classic group (offsets only) is replaced silently, as in Kafka.
            self.classic.groups.pop(group_id, None)
        if record_type == METADATA and value is None:
            del self.groups[group_id]
        else:
            apply_record(group, key, value)

    # -- timers and loading --------------------------------------------------------------------

    def on_timer(self, key: tuple, now_ms: int) -> Result:
        fx = Effects(self.config, now_ms)
        kind, group_id, member_id = key
        group = self.groups.get(group_id)
        if group is not None:
            if kind == timers.TIMERS.session:
                membership.on_session_timeout(self, group, member_id, fx)
            elif kind == timers.TIMERS.rebalance:
                membership.on_rebalance_timeout(self, group, member_id, fx)
        if kind == timers.REGEX_REFRESH:
            regex_refresh.on_refresh(self, group_id, fx)
        return fx.result()

    def on_loaded(self, now_ms: int) -> Result:
        fx = Effects(self.config, now_ms)
        self.rebalance_epochs.clear()
        self.regex_refreshes.clear()  # their timers died with the previous load
        self.regex_topic_filters.clear()
        for gid, group in self.groups.items():
            # Topics may have changed while the shard was not loaded (Kafka's metadata
            # refresh deadline starts at 0): the first heartbeat re-checks the hash.
            group.refresh_needed = True
            for m in group.members.values():
                timers.schedule_session(self, gid, m, fx)
                if m.state == MemberState.UNREVOKED_PARTITIONS:
                    fx.schedule(timers.TIMERS.rebalance_key(gid, m.member_id),
                                max(0, m.rebalance_timeout_ms))
                    self.rebalance_epochs[(gid, m.member_id)] = m.member_epoch
        return fx.result()

    def on_topics_changed(self, image: TopicsImage) -> None:
        """New topics image: groups subscribed to a changed topic re-check their metadata
        hash on their next heartbeat (`onMetadataUpdate`); created topics make regex groups
        refresh on a later heartbeat (`regex_refresh`)."""
        old, self.image = self.image, image
        if any(old.topic_id(n) != t.topic_id for n, t in image.by_name.items()):
            self.last_image_with_new_topics = image.version
        changed = image.changed_names(old)
        if not changed:
            return
        for group in self.groups.values():
            if group.regex_counts or any(n in group.name_counts for n in changed):
                group.refresh_needed = True

    # -- admin views -------------------------------------------------------------------------
    def describe(self, group_id: str, version: int, include_ops: bool) -> Any:
        return describe.describe(self, group_id, version)

    def list_groups(self, states: set[str], types: set[str]) -> list[Any]:
        return modern_groups.list_groups(self.groups, states, types, describe.GROUP_TYPE,
                                         describe.PROTOCOL_TYPE)
    def validate_delete(self, group: ConsumerGroup) -> int:
        return modern_groups.validate_delete(group)
    def delete_records(self, group: ConsumerGroup, records: list[Any]) -> None:
        """Group tombstones in Kafka's order (`ConsumerGroup.createGroupTombstoneRecords`)."""
        gid = group.group_id
        records.extend(rec.RECORDS.group_tombstones(
            gid, sorted(group.members), sorted(group.target),
            [rec.regex_tombstone(gid, rx) for rx in sorted(group.regexes)]))

    def canonical(self) -> dict[str, Any]:
        return {g: grp.canonical() for g, grp in sorted(self.groups.items())}


def apply_record(group: ConsumerGroup, key: Any, value: Any) -> None:
    """Apply one consumer-group record to `group` (live replay, or a scratch copy)."""
    record_type = key.RECORD_TYPE
    if record_type == METADATA:
        if value is not None:
            group.replay_metadata(value)
    elif record_type == MEMBER_METADATA:
        group.replay_member_metadata(key.member_id, value)
    elif record_type == TARGET_MEMBER:
        group.replay_target_member(key.member_id, value)
    elif record_type == TARGET_METADATA:
        group.replay_target_metadata(value)
    elif record_type == CURRENT_ASSIGNMENT:
        group.replay_current_assignment(key.member_id, value)
    elif record_type == REGEX:
        group.replay_regex(key.regular_expression, value)
    # Type 4 (legacy partition metadata) is read and ignored: the hash replaced it.


def scratch_apply(group: ConsumerGroup, records: list[Any]) -> None:
    for record in records:
        key = record.key
        if key.RECORD_TYPE in RECORD_TYPES and key.group_id == group.group_id:
            apply_record(group, key, record.value)
