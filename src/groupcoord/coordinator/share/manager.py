"""The share groups of one shard: their state, the steps ShareGroupHeartbeat (`heartbeat`)
and the session timer share, list and delete.

Mirrors the share half of Kafka's `GroupMetadataManager` (`shareGroupHeartbeat`,
`shareGroupLeave`, the session timer, `ShareGroup.asDescribedGroup`) with the `simple`
assignor. Rules kept:

- Handlers return records; `replay` (in `group`) is the only mutation path.
- The group epoch is bumped on a new member, a subscription change, a metadata-hash
  change and a departure; the target assignment is recomputed when the group epoch is
  ahead of the assignment epoch and `can_compute_target` allows it (KIP-1263,
  `GroupMetadataManager.canComputeNextTargetAssignment`): no target yet (timestamp 0), an
  interval of 0, or `share.assignment.interval.ms` passed since the last target's
  `AssignmentTimestamp`. A held-back target is computed by a later heartbeat, not a timer.
- A departure recomputes the target only when the interval allows it (Kafka never does on
  a departure; with interval 0 we keep recomputing at once). The last member leaving writes
  the target metadata with timestamp 0, as Kafka does, so the next join assigns at once.
- A member jumps straight to the target epoch with target ∩ subscribed topics: there is
  no revocation phase, because share-partitions may be shared.
- Session timers are keyed soft state `("share-session", group, member)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groupcoord.coordinator import modern_groups
from groupcoord.coordinator.assignment_interval import can_compute_next_target
from groupcoord.coordinator.assignors import GroupSpec, MemberSpec
from groupcoord.coordinator.assignors.simple import SimpleAssignor
from groupcoord.coordinator.result import GroupEvent, Result, ScheduleTimer
from groupcoord.coordinator.share import group as grp
from groupcoord.coordinator.share import records as rec
from groupcoord.coordinator.share import state_metadata as smd
from groupcoord.coordinator.share.group import ShareGroup, ShareMember
from groupcoord.coordinator.topics import TopicsImage, group_hash, topic_hash

SESSION_TIMER = "share-session"
SIMPLE_ASSIGNOR = SimpleAssignor()
ASSIGNOR_NAME = SIMPLE_ASSIGNOR.name


class ShareGroups:
    """All share groups of one `__consumer_offsets` shard."""

    def __init__(self, session_timeout_ms: int = 45_000, heartbeat_interval_ms: int = 5_000,
                 max_size: int = 200, assignment_interval_ms: int = 1_000,
                 initialize_retry_interval_ms: int = 30_000) -> None:
        self.groups: dict[str, ShareGroup] = {}
        self.image = TopicsImage()
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_size = max_size
        # `group.share.assignment.interval.ms` (KIP-1263).
        self.assignment_interval_ms = assignment_interval_ms
        # `group.share.initialize.retry.interval.ms`, at least `offsets.commit.timeout.ms`.
        self.initialize_retry_interval_ms = initialize_retry_interval_ms

    def get(self, group_id: str) -> ShareGroup | None:
        return self.groups.get(group_id)

    def replay(self, key: Any, value: Any, now_ms: int = -1) -> None:
        grp.replay(self.groups, key, value, now_ms)

    def on_topics_changed(self, image: TopicsImage) -> None:
        self.image = image

    def on_loaded(self, now_ms: int) -> Result:
        result = Result()
        for group in self.groups.values():
            if group.state_metadata is not None and group.state_metadata.replayed_at_ms < 0:
                # Replayed at start-up: Kafka stamps initializing entries with the load time.
                group.state_metadata.replayed_at_ms = now_ms
            for member_id in group.members:
                result.timers.append(self.session_timer(group.group_id, member_id, now_ms))
        return result

    def session_timer(self, group_id: str, member_id: str, now_ms: int,
                      timeout_ms: int | None = None) -> ScheduleTimer:
        timeout = self.session_timeout_ms if timeout_ms is None else timeout_ms
        return ScheduleTimer((SESSION_TIMER, group_id, member_id), now_ms + timeout)

    # -- timers -------------------------------------------------------------------------

    def on_timer(self, key: tuple[Any, ...], now_ms: int) -> Result:
        _kind, group_id, member_id = key
        group = self.groups.get(group_id)
        result = Result()
        if group is not None and member_id in group.members:
            # A session timeout carries no group configs: the broker interval decides. The
            # remaining members see the new target only at their next heartbeat, which
            # computes it under the group's own interval anyway.
            self.remove_member(group, member_id, now_ms, result.records,
                               self.assignment_interval_ms, result.events, "session timeout")
        return result

    # -- assignment interval (KIP-1263) -------------------------------------------------

    def assignment_interval(self, overrides: Mapping[str, str]) -> int:
        """`GroupMetadataManager.shareGroupAssignmentIntervalMs`: the group's
        `share.assignment.interval.ms`, else the broker's."""
        return int(overrides.get("share.assignment.interval.ms", self.assignment_interval_ms))

    @staticmethod
    def can_compute_target(group: ShareGroup, interval_ms: int, now_ms: int) -> bool:
        """`GroupMetadataManager.canComputeNextTargetAssignment`."""
        return can_compute_next_target(group.assignment_timestamp, interval_ms, now_ms)

    # -- shared steps -------------------------------------------------------------------

    @staticmethod
    def initialized_assignment_pending(group: ShareGroup) -> bool:
        """`GroupMetadataManager.initializedAssignmentPending`: a subscribed topic's
        initialized partitions differ from what the target assigns of it."""
        md = group.state_metadata
        names = group.subscribed_names()
        if not group.members or md is None or not md.initialized or not names:
            return False
        assigned: dict[bytes, set[int]] = {}
        for assignment in group.target.values():
            for topic_id, partitions in assignment.items():
                assigned.setdefault(topic_id, set()).update(partitions)
        return any(value.name in names and assigned.get(topic_id) != set(value.partitions)
                   for topic_id, value in md.initialized.items())

    def metadata_hash(self, names: set[str]) -> int:
        return group_hash({n: topic_hash(self.image, n) for n in names})

    def compute_target(self, group: ShareGroup, members: Mapping[str, ShareMember]
                       ) -> dict[str, dict[bytes, frozenset[int]]]:
        specs = {}
        for mid, member in members.items():
            ids = frozenset(t for t in (self.image.topic_id(n)
                                        for n in member.subscribed_topic_names) if t)
            specs[mid] = MemberSpec(mid, None, member.rack_id, ids,
                                    group.target.get(mid, {}))
        homogeneous = len({s.subscribed_topic_ids for s in specs.values()}) <= 1
        # Only initialized share-partitions are assignable
        # (`ShareTargetAssignmentBuilder.withTopicAssignablePartitionsMap`).
        initialized = group.state_metadata.initialized_partitions() \
            if group.state_metadata is not None else {}
        out = SIMPLE_ASSIGNOR.assign(
            GroupSpec(specs, homogeneous), self.image,
            assignable=lambda t, p: p in initialized.get(t, ()))
        return {m: {t: frozenset(p) for t, p in a.items() if p} for m, a in out.items()}

    def target_records(self, group: ShareGroup, members: Mapping[str, ShareMember],
                       epoch: int, now_ms: int, records: list[Any]
                       ) -> dict[str, dict[bytes, frozenset[int]]]:
        target = self.compute_target(group, members)
        for mid in members:
            if target.get(mid, {}) != group.target.get(mid):
                records.append(rec.target_member(group.group_id, mid, target.get(mid, {})))
        records.append(rec.target_metadata(group.group_id, epoch, now_ms))
        return target

    def remove_member(self, group: ShareGroup, member_id: str, now_ms: int,
                      records: list[Any], interval_ms: int, events: list[GroupEvent],
                      reason: str) -> None:
        """Tombstones in Kafka's order (`shareGroupFenceMember`), a group epoch bump (its
        `group_epoch_bumped` event carries `reason`), and a new target when the assignment
        interval allows it."""
        gid = group.group_id
        records.extend(rec.member_removal(gid, member_id))
        remaining = {m: v for m, v in group.members.items() if m != member_id}
        epoch = group.group_epoch + 1
        names = {n for m in remaining.values() for n in m.subscribed_topic_names}
        records.append(rec.group_metadata(gid, epoch, self.metadata_hash(names)))
        events.append(GroupEvent(gid, "group_epoch_bumped", member_id, reason, epoch, now_ms,
                                 {"protocol": "share"}))
        if not remaining:
            records.append(rec.target_metadata(gid, epoch, 0))
        elif self.can_compute_target(group, interval_ms, now_ms):
            self.target_records(group, remaining, epoch, now_ms, records)

    # -- admin ----------------------------------------------------------------------------

    def list_groups(self, states: set[str], types: set[str]) -> list[Any]:
        return modern_groups.list_groups(self.groups, states, types, "share", grp.PROTOCOL_TYPE)
    def validate_delete(self, group: ShareGroup) -> int:
        return modern_groups.validate_delete(group)
    def delete_records(self, group: ShareGroup, records: list[Any]) -> None:
        """`ShareGroup.createGroupTombstoneRecords` order."""
        gid = group.group_id
        records.extend(rec.RECORDS.group_tombstones(gid, sorted(group.members),
                                                    sorted(group.target), [smd.tombstone(gid)]))

    def canonical(self) -> dict[str, Any]:
        return {g: grp_.canonical() for g, grp_ in sorted(self.groups.items())}
