"""The streams groups of one shard (the streams half of Kafka's `GroupMetadataManager`):
RPC entry points, replay, timers, loading, describe/list/delete, over the groups and
soft state of `groups_state`.

`replay` is the one mutation path of durable streams-group state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groupcoord.coordinator import modern_groups
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.consumer.errors import HeartbeatError
from groupcoord.coordinator.result import OpContext, Result
from groupcoord.coordinator.streams import describe, membership, timers
from groupcoord.coordinator.streams import records as rec
from groupcoord.coordinator.streams.group import (
    StreamsGroup,
    replay_current_assignment,
    replay_member_metadata,
    target_from_record,
)
from groupcoord.coordinator.streams.groups_state import StreamsGroupsState
from groupcoord.coordinator.streams.heartbeat import HeartbeatResult, heartbeat, update_target
from groupcoord.coordinator.streams.member import MemberState
from groupcoord.coordinator.streams.topology import StreamsTopology
from groupcoord.coordinator.streams.validate import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, validate
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import streams_group_describe as describe_wire
from groupcoord.wire.generated import streams_group_heartbeat as wire
from groupcoord.wire.generated.list_groups import ListedGroup

# Record types of streams groups in `__consumer_offsets`.
METADATA, MEMBER_METADATA, TARGET_METADATA = 17, 19, 20
TARGET_MEMBER, CURRENT_ASSIGNMENT, TOPOLOGY = 21, 22, 23
RECORD_TYPES = frozenset({17, 19, 20, 21, 22, 23})
GROUP_TYPE = "streams"
PROTOCOL_TYPE = "streams"


class StreamsGroups(StreamsGroupsState):
    """The operations of the shard's streams groups."""

    # -- StreamsGroupHeartbeat -----------------------------------------------------------
    def streams_group_heartbeat(self, request: Any, version: int, ctx: OpContext,
                                now_ms: int, overrides: Mapping[str, str] | None = None
                                ) -> Result:
        """The response is a `HeartbeatResult`: the API layer creates its internal topics.
        `overrides`: the group's dynamic configs (None keeps what was last given)."""
        fx = Effects(self.config, now_ms)
        if overrides is not None:
            self._set_overrides(request.group_id, overrides)
        try:
            validate(request)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                result = HeartbeatResult(membership.leave(self, request, fx))
            else:
                result = heartbeat(self, request, version, ctx.client_id, ctx.client_host, fx)
        except HeartbeatError as exc:
            # Nothing of a failed heartbeat is written (Kafka throws before its records).
            return Result(response=HeartbeatResult(wire.StreamsGroupHeartbeatResponse(
                error_code=exc.code, error_message=exc.message)))
        return fx.result(result)

    # -- replay ----------------------------------------------------------------------------
    def replay(self, key: Any, value: Any) -> None:
        record_type = key.RECORD_TYPE
        group_id = key.group_id
        group = self.groups.get(group_id)
        if value is None:
            if group is not None:
                self._replay_tombstone(group, record_type, key)
            return
        if group is None:
            group = self.groups[group_id] = StreamsGroup(group_id)
        if record_type == METADATA:
            group.group_epoch = value.epoch
            group.metadata_hash = value.metadata_hash
            group.validated_topology_epoch = value.validated_topology_epoch
            group.stored_description_epoch = value.stored_description_topology_epoch
            group.failed_description_epoch = value.failed_description_topology_epoch
            group.last_assignment_configs = {c.key: c.value
                                             for c in value.last_assignment_configs or []}
        elif record_type == TOPOLOGY:
            group.topology = StreamsTopology.from_record(value)
        elif record_type == MEMBER_METADATA:
            replay_member_metadata(group, key.member_id, value)
        elif record_type == TARGET_MEMBER:
            group.target[key.member_id] = target_from_record(value)
        elif record_type == TARGET_METADATA:
            group.assignment_epoch = value.assignment_epoch
            group.assignment_timestamp = value.assignment_timestamp
        elif record_type == CURRENT_ASSIGNMENT:
            replay_current_assignment(group, key.member_id, value)

    def _replay_tombstone(self, group: StreamsGroup, record_type: int, key: Any) -> None:
        if record_type == METADATA:
            del self.groups[group.group_id]
        elif record_type == TOPOLOGY:
            group.topology = None
            group.configured = None
        elif record_type == MEMBER_METADATA:
            group.remove_member(key.member_id)
        elif record_type == TARGET_MEMBER:
            group.target.pop(key.member_id, None)
        elif record_type == TARGET_METADATA:
            group.assignment_epoch = -1
            group.assignment_timestamp = 0
        elif record_type == CURRENT_ASSIGNMENT:
            replay_current_assignment(group, key.member_id, None)

    # -- loading, topics, timers -------------------------------------------------------------
    def on_loaded(self, now_ms: int) -> Result:
        fx = Effects(self.config, now_ms)
        for group_id, group in sorted(self.groups.items()):
            for member_id, member in sorted(group.members.items()):
                fx.schedule(timers.TIMERS.session_key(group_id, member_id),
                            self.settings(group_id).session_timeout_ms)
                if member.state == MemberState.UNREVOKED_TASKS:
                    fx.schedule(timers.TIMERS.rebalance_key(group_id, member_id),
                                max(0, member.rebalance_timeout_ms))
                    self.rebalance_epochs[(group_id, member_id)] = member.member_epoch
        return fx.result()

    def on_topics_changed(self, image: TopicsImage) -> None:
        """`onMetadataUpdate`: groups using a changed topic re-check their topology on
        their next heartbeat."""
        changed = image.changed_names(self.image)
        self.image = image
        for group in self.groups.values():
            if any(group.subscribes_to(t) for t in changed):
                group.refresh_deadline_ms = 0
                group.refresh_epoch = -1

    def on_timer(self, key: tuple, now_ms: int) -> Result:
        fx = Effects(self.config, now_ms)
        kind, group_id, member_id = key
        group = self.groups.get(group_id)
        if kind == timers.INITIAL_DELAY:
            self.initial_delays.discard(group_id)
            if group is not None and group.members and group.configured is not None:
                update_target(self, group, group.group_epoch, dict(group.members),
                              dict(group.target), group.configured, group.topology,
                              group.last_assignment_configs, fx, None)
            return fx.result()
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return fx.result()
        if kind == timers.TIMERS.session:
            membership.fence(self, group, member, fx, "member_expired", "session timeout")
        elif kind == timers.TIMERS.rebalance:
            armed = self.rebalance_epochs.pop((group_id, member_id), None)
            if armed == member.member_epoch:
                membership.fence(self, group, member, fx, "member_removed",
                                 "the member failed to revoke its tasks in time")
        return fx.result()

    # -- admin ------------------------------------------------------------------------------
    def describe(self, group_id: str, other_kind: bool) -> describe_wire.DescribedGroup:
        group = self.groups.get(group_id)
        if group is None:
            message = f"Group {group_id} is not a streams group." if other_kind \
                else f"Group {group_id} not found."
            return describe_wire.DescribedGroup(group_id=group_id,
                                                error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                                                error_message=message)
        return describe.described(group)

    def list_groups(self, states: set[str], types: set[str]) -> list[ListedGroup]:
        return modern_groups.list_groups(self.groups, states, types, GROUP_TYPE, PROTOCOL_TYPE)
    def validate_delete(self, group: StreamsGroup) -> int:
        """`StreamsGroup.validateDeleteGroup`: only an empty group."""
        return modern_groups.validate_delete(group)
    def delete_records(self, group: StreamsGroup, records: list[Any]) -> None:
        """`StreamsGroup.createGroupTombstoneRecords`, in Kafka's order: targets by member,
        in membership order, and the topology last."""
        gid = group.group_id
        records.extend(rec.RECORDS.group_tombstones(gid, list(group.members),
                                                    list(group.members)))
        records.append(rec.topology_tombstone(gid))

    def canonical(self) -> dict[str, Any]:
        """Durable state only, for replay-equivalence checks."""
        return {gid: {
            "epoch": g.group_epoch, "hash": g.metadata_hash,
            "validated": g.validated_topology_epoch, "configs": g.last_assignment_configs,
            "assignment": (g.assignment_epoch, g.assignment_timestamp),
            "topology": None if g.topology is None else
            (g.topology.epoch, sorted(g.topology.subtopologies)),
            "members": {m: _canonical_member(v) for m, v in sorted(g.members.items())},
            "target": {m: _canonical_tasks(t.active, t.standby, t.warmup)
                       for m, t in sorted(g.target.items())},
        } for gid, g in sorted(self.groups.items())}


def _canonical_tasks(*roles: Mapping[str, Any]) -> tuple[Any, ...]:
    """Task maps as sorted tuples, so insertion order (live vs replayed) does not matter."""
    return tuple(tuple(sorted((s, sorted(p.items()) if isinstance(p, Mapping) else sorted(p))
                              for s, p in role.items())) for role in roles)


def _canonical_member(m: Any) -> tuple[Any, ...]:
    a, r = m.assigned, m.pending_revocation
    return (m.member_epoch, m.previous_member_epoch, int(m.state), m.instance_id, m.rack_id,
            m.client_id, m.client_host, m.rebalance_timeout_ms, m.topology_epoch,
            m.process_id, m.user_endpoint, m.client_tags,
            _canonical_tasks(a.active, a.standby, a.warmup),
            _canonical_tasks(r.active, r.standby, r.warmup))
