"""The target assignment computed off the event loop, when
`group.consumer.assignor.offload.enable` is set (off by default). Kafka 4.4 defines the
config (internal, default true) but its `GroupMetadataManager` never reads it and runs the
assignor within the heartbeat. Here the design the config names is implemented: the
assignor runs on the `CoordinatorExecutor` and its result is written by a later operation.

The heartbeat that would compute a new target captures what the assignor reads (the members
with their resolved subscriptions, the current target, the topics image: all immutable
values) and returns an `Offload`; the runtime runs it on a worker thread, and the records it
built are written by a later operation only if the group is still at the epoch they were
computed for with the same members. Otherwise they are dropped and the next heartbeat
computes again. One computation per group is in flight at a time, whatever its epoch (soft
state, not logged: after a reload the next heartbeat starts one). Meanwhile members reconcile toward the last
target, as when the assignment interval batches joins. A group's first target is computed
on the heartbeat (`heartbeat._maybe_update_target`): members take the target's epoch, and
before the first target that is 0, which a member would read as "join again".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groupcoord.coordinator.assignors import TopicDescriber
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.consumer.target import AssignorFailure, Subscribed, compute_target
from groupcoord.coordinator.result import Offload, Result


def target_key(group_id: str) -> tuple[str, str]:
    return ("target", group_id)


def offload_target(groups: Mapping[str, ConsumerGroup], in_flight: dict[str, int], group_id: str,
                   members: Mapping[str, ConsumerGroupMember],
                   old_target: Mapping[str, Mapping[bytes, frozenset[int]]],
                   subscribed: Subscribed, topics: TopicDescriber, assignor: str, epoch: int,
                   fx: Effects) -> None:
    """Add the Offload that computes `group_id`'s target for `epoch`, unless one is in
    flight for the group (`in_flight`: group -> epoch): while members keep joining, a
    computation started for every epoch would be dropped as soon as it finished. `members` and `old_target` must be
    this operation's own copies; `groups` is the live table the result is checked against."""
    if group_id in in_flight:
        return
    in_flight[group_id] = epoch
    now_ms = fx.now_ms
    member_ids = frozenset(members)

    def compute() -> list[Any] | None:
        records: list[Any] = []
        try:
            compute_target(group_id, members, old_target, subscribed, topics, assignor, epoch,
                           now_ms, records)
        except AssignorFailure:
            return None  # the group keeps its target; the next heartbeat tries again
        return records

    def apply(_shard: object, records: list[Any] | None, _now_ms: int) -> Result | None:
        if in_flight.get(group_id) == epoch:
            del in_flight[group_id]
        group = groups.get(group_id)
        if (records is None or group is None or group.group_epoch != epoch
                or group.assignment_epoch >= epoch or frozenset(group.members) != member_ids):
            return None  # superseded: the group moved on while the assignor ran
        return Result(records=records)

    fx.offloads.append(Offload(target_key(group_id), compute, apply))
