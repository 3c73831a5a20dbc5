"""Share groups and their members, as rebuilt by replaying records 10-15.

Mirrors Kafka's `ShareGroup` / `ShareGroupMember` (modern/share) and the share branch of
`GroupMetadataManager.replay`. The state is derived, as in Kafka: EMPTY without members,
STABLE with members (share groups have no assigning or reconciling phase, since
partitions may be shared and so need no hand-off). `replay` is the only mutation path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from groupcoord.coordinator.share import records as rec
from groupcoord.coordinator.share import state_metadata as smd
from groupcoord.coordinator.share.state_metadata import StatePartitionMetadata

PROTOCOL_TYPE = "share"
Assignment = dict[bytes, frozenset[int]]


class ShareGroupState(Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: Assignment = field(default_factory=dict)

    def canonical(self) -> tuple[Any, ...]:
        return (self.member_epoch, self.previous_member_epoch, self.rack_id, self.client_id,
                self.client_host, self.subscribed_topic_names,
                {t: sorted(p) for t, p in sorted(self.assigned.items())})


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    assignment_timestamp: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # ShareGroupStatePartitionMetadata; None until the first record 15 (Kafka keeps it in a
    # map beside the groups, keyed the same way).
    state_metadata: StatePartitionMetadata | None = None

    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_names(self) -> set[str]:
        return {n for m in self.members.values() for n in m.subscribed_topic_names}

    def canonical(self) -> dict[str, Any]:
        return {
            "epoch": self.group_epoch, "hash": self.metadata_hash,
            "assignment_epoch": self.assignment_epoch,
            "assignment_timestamp": self.assignment_timestamp,
            "members": {m: v.canonical() for m, v in sorted(self.members.items())},
            "target": {m: {t: sorted(p) for t, p in sorted(a.items())}
                       for m, a in sorted(self.target.items())},
            "state_metadata": (self.state_metadata.canonical()
                               if self.state_metadata is not None else None),
        }


def _assignment(topic_partitions: list[Any]) -> Assignment:
    return {bytes(tp.topic_id): frozenset(tp.partitions) for tp in topic_partitions}


def replay(groups: dict[str, ShareGroup], key: Any, value: Any, now_ms: int = -1) -> None:
    """Apply one share-group record to `groups` (`now_ms`: the time of the replay, which
    stamps initializing share-partitions, as Kafka's replay does)."""
    group_id = key.group_id
    kind = key.RECORD_TYPE
    group = groups.get(group_id)
    if group is None:
        if value is None:
            return
        group = groups[group_id] = ShareGroup(group_id)
    if kind == rec.GROUP_METADATA:
        if value is None:
            del groups[group_id]
        else:
            group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
    elif kind == rec.TARGET_METADATA:
        if value is None:
            group.assignment_epoch = -1
        else:
            group.assignment_epoch = value.assignment_epoch
            group.assignment_timestamp = value.assignment_timestamp
    elif kind == rec.STATE_PARTITION_METADATA:
        group.state_metadata = None if value is None else smd.from_value(value, now_ms)
    elif kind == rec.TARGET_MEMBER:
        if value is None:
            group.target.pop(key.member_id, None)
        else:
            group.target[key.member_id] = _assignment(value.topic_partitions)
    else:
        _replay_member(group, kind, key.member_id if hasattr(key, "member_id") else "", value)


def _replay_member(group: ShareGroup, kind: int, member_id: str, value: Any) -> None:
    if kind == rec.MEMBER_METADATA:
        if value is None:
            group.members.pop(member_id, None)
            return
        member = group.members.setdefault(member_id, ShareMember(member_id))
        member.rack_id = value.rack_id
        member.client_id = value.client_id
        member.client_host = value.client_host
        member.subscribed_topic_names = tuple(value.subscribed_topic_names)
    elif kind == rec.CURRENT_ASSIGNMENT:
        if member_id not in group.members:
            if value is None:
                return
            group.members[member_id] = ShareMember(member_id)
        member = group.members[member_id]
        if value is None:
            member.member_epoch, member.assigned = -1, {}
        else:
            member.member_epoch = value.member_epoch
            member.previous_member_epoch = value.previous_member_epoch
            member.assigned = _assignment(value.assigned_partitions)
