"""Target assignment: run the group's server assignor and keep only what changed
(`TargetAssignmentBuilder`, `GroupMetadataManager.maybeUpdateTargetAssignment`).

It runs only when the group epoch moved past the assignment epoch. The assignor sees
every member's subscribed topic ids and current target; the output records are one
TargetAssignmentMember per member whose target changed (a delta), then
TargetAssignmentMetadata(assignmentEpoch = groupEpoch).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from groupcoord.coordinator.assignors import ASSIGNORS, GroupSpec, MemberSpec, TopicDescriber
from groupcoord.coordinator.consumer import records as rec
from groupcoord.coordinator.consumer.member import ConsumerGroupMember

Target = dict[str, Mapping[bytes, frozenset[int]]]
Subscribed = Callable[[ConsumerGroupMember], frozenset[bytes]]


class AssignorFailure(Exception):
    """The assignor could not compute an assignment (UNKNOWN_SERVER_ERROR)."""


def preferred_assignor(members: Mapping[str, ConsumerGroupMember], default: str) -> str:
    """The most common ServerAssignor among members, else the default; ties by name."""
    counts: dict[str, int] = {}
    for m in members.values():
        if m.server_assignor:
            counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
    if not counts:
        return default
    return max(sorted(counts), key=lambda name: counts[name])


def compute_target(group_id: str, members: Mapping[str, ConsumerGroupMember],
                   old_target: Mapping[str, Mapping[bytes, frozenset[int]]],
                   subscribed: Subscribed, topics: TopicDescriber, assignor_name: str,
                   epoch: int, now_ms: int, records: list[Any]) -> Target:
    """Append the delta records and return the complete new target of every member."""
    assignor = ASSIGNORS.get(assignor_name)
    if assignor is None:
        raise AssignorFailure(f"assignor {assignor_name} is not available")
    specs: dict[str, MemberSpec] = {}
    # Members mostly share a few subscriptions: resolve each distinct one once.
    resolved: dict[tuple[tuple[str, ...], str | None], frozenset[bytes]] = {}
    empty: dict[bytes, frozenset[int]] = {}
    for member_id in sorted(members):
        m = members[member_id]
        key = (m.subscribed_topic_names, m.subscribed_topic_regex)
        topic_ids = resolved.get(key)
        if topic_ids is None:
            topic_ids = resolved[key] = subscribed(m)
        specs[member_id] = MemberSpec(member_id, m.instance_id, m.rack_id, topic_ids,
                                      old_target.get(member_id, empty))
    homogeneous = len(set(resolved.values())) <= 1
    try:
        result = assignor.assign(GroupSpec(specs, homogeneous), topics)
    except Exception as exc:  # any assignor failure is the group's UNKNOWN_SERVER_ERROR
        raise AssignorFailure(str(exc)) from exc
    new_target: Target = {}
    for member_id in specs:
        assigned = result.get(member_id, empty)
        old = old_target.get(member_id)
        # A set equals a frozenset of the same ints: compare before building anything, so
        # a member the assignor left alone costs one comparison (the delta is what's written).
        if old is not None and len(old) == sum(1 for ps in assigned.values() if ps) \
                and all(old.get(t) == ps for t, ps in assigned.items() if ps):
            new_target[member_id] = old
            continue
        new = {bytes(t): frozenset(ps) for t, ps in assigned.items() if ps}
        new_target[member_id] = new
        records.append(rec.target_member(group_id, member_id, new))
    records.append(rec.target_metadata(group_id, epoch, now_ms))
    return new_target
