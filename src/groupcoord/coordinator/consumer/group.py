"""A consumer group's durable state and its replay (`ConsumerGroup`, `ModernGroup`).

Only the `replay_*` methods mutate it. Besides the records' contents the group keeps
indexes maintained by replay so that a heartbeat costs O(changes): the owner and epoch
of every owned or revoking partition (`owners`), subscription counts by topic name and by
regex, and the static instance id -> member id map. `refresh_needed` is soft state: set
when a subscribed topic changed in the topics image, cleared by the next epoch check.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from groupcoord.coordinator.consumer.member import ClassicMeta, ConsumerGroupMember
from groupcoord.coordinator.consumer.state import ConsumerGroupState, MemberState

G = ConsumerGroupState


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    topics: frozenset[str]
    version: int
    timestamp_ms: int


def _epochs(topics: list[Any]) -> dict[bytes, dict[int, int]]:
    out: dict[bytes, dict[int, int]] = {}
    for tp in topics:
        epochs = tp.assignment_epochs
        parts = {p: (epochs[i] if epochs and i < len(epochs) else 0)
                 for i, p in enumerate(tp.partitions)}
        if parts:
            out.setdefault(bytes(tp.topic_id), {}).update(parts)
    return out


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        self.assignment_timestamp_ms = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, dict[bytes, frozenset[int]]] = {}
        self.static: dict[str, str] = {}
        self.regexes: dict[str, ResolvedRegex] = {}
        # topic id -> partition -> (member id, epoch) of the member owning or revoking it.
        self.owners: dict[bytes, dict[int, tuple[str, int]]] = {}
        self.name_counts: Counter[str] = Counter()
        self.regex_counts: Counter[str] = Counter()
        self.assignor_counts: Counter[str] = Counter()
        self.classic_members = 0
        self.refresh_needed = False

    # -- derived views -------------------------------------------------------------------
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return G.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return G.ASSIGNING
        for m in self.members.values():
            if not m.is_reconciled_to(self.assignment_epoch):
                return G.RECONCILING
        return G.STABLE

    def partition_epoch(self, topic_id: bytes, partition: int) -> int:
        owner = self.owners.get(topic_id, {}).get(partition)
        return -1 if owner is None else owner[1]

    def partition_owner(self, topic_id: bytes, partition: int) -> str | None:
        owner = self.owners.get(topic_id, {}).get(partition)
        return None if owner is None else owner[0]

    def preferred_assignor(self, default: str) -> str:
        if not self.assignor_counts:
            return default
        return max(sorted(self.assignor_counts), key=lambda a: self.assignor_counts[a])

    def subscribed_topic_names(self) -> set[str]:
        """Names subscribed by name or through a resolved regex in use."""
        names = set(self.name_counts)
        for regex in self.regex_counts:
            resolved = self.regexes.get(regex)
            if resolved is not None:
                names |= resolved.topics
        return names

    def all_classic(self) -> bool:
        return bool(self.members) and self.classic_members == len(self.members)

    # -- replay ----------------------------------------------------------------------------
    def replay_metadata(self, value: Any) -> None:
        self.group_epoch = value.epoch
        self.metadata_hash = value.metadata_hash

    def replay_member_metadata(self, member_id: str, value: Any | None) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:
                self._unindex_subscription(old)
                del self.members[member_id]
            return
        classic = None
        cm = value.classic_member_metadata
        if cm is not None:
            classic = ClassicMeta(cm.session_timeout_ms,
                                  tuple((p.name, bytes(p.metadata)) for p in cm.supported_protocols))
        base = old or ConsumerGroupMember(member_id)
        new = replace(base, instance_id=value.instance_id, rack_id=value.rack_id or None,
                      client_id=value.client_id, client_host=value.client_host,
                      subscribed_topic_names=tuple(value.subscribed_topic_names),
                      subscribed_topic_regex=value.subscribed_topic_regex or None,
                      rebalance_timeout_ms=value.rebalance_timeout_ms,
                      server_assignor=value.server_assignor or None, classic=classic)
        if old is not None:
            self._unindex_subscription(old)
        self._index_subscription(new)
        self.members[member_id] = new

    def _unindex_subscription(self, m: ConsumerGroupMember) -> None:
        self.name_counts.subtract(m.subscribed_topic_names)
        self.name_counts += Counter()  # drops zero counts
        if m.subscribed_topic_regex:
            self.regex_counts[m.subscribed_topic_regex] -= 1
            self.regex_counts += Counter()
        if m.server_assignor:
            self.assignor_counts[m.server_assignor] -= 1
            self.assignor_counts += Counter()
        if m.instance_id is not None and self.static.get(m.instance_id) == m.member_id:
            del self.static[m.instance_id]
        if m.classic is not None:
            self.classic_members -= 1

    def _index_subscription(self, m: ConsumerGroupMember) -> None:
        self.name_counts.update(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            self.regex_counts[m.subscribed_topic_regex] += 1
        if m.server_assignor:
            self.assignor_counts[m.server_assignor] += 1
        if m.instance_id is not None:
            self.static[m.instance_id] = m.member_id
        if m.classic is not None:
            self.classic_members += 1

    def replay_target_member(self, member_id: str, value: Any | None) -> None:
        if value is None:
            self.target.pop(member_id, None)
            return
        self.target[member_id] = {bytes(tp.topic_id): frozenset(tp.partitions)
                                  for tp in value.topic_partitions if tp.partitions}

    def replay_target_metadata(self, value: Any | None) -> None:
        if value is None:
            self.assignment_epoch = -1
            self.assignment_timestamp_ms = 0
            return
        self.assignment_epoch = value.assignment_epoch
        self.assignment_timestamp_ms = value.assignment_timestamp

    def replay_current_assignment(self, member_id: str, value: Any | None) -> None:
        old = self.members.get(member_id)
        if old is not None:
            self._remove_owners(old)
        if value is None:
            if old is not None:
                self.members[member_id] = replace(old, member_epoch=-1, previous_member_epoch=-1,
                                                  assigned={}, pending_revocation={})
            return
        base = old or ConsumerGroupMember(member_id)
        new = replace(base, member_epoch=value.member_epoch,
                      previous_member_epoch=value.previous_member_epoch,
                      state=MemberState.of(value.state),
                      assigned=_epochs(value.assigned_partitions),
                      pending_revocation=_epochs(value.partitions_pending_revocation))
        if old is None:
            self._index_subscription(new)
        self.members[member_id] = new
        self._add_owners(new)

    def _remove_owners(self, m: ConsumerGroupMember) -> None:
        for assignment in (m.assigned, m.pending_revocation):
            for topic_id, parts in assignment.items():
                owned = self.owners.get(topic_id)
                if owned is None:
                    continue
                for p in parts:
                    if owned.get(p, ("",))[0] == m.member_id:
                        del owned[p]
                if not owned:
                    del self.owners[topic_id]

    def _add_owners(self, m: ConsumerGroupMember) -> None:
        for assignment in (m.assigned, m.pending_revocation):
            for topic_id, parts in assignment.items():
                owned = self.owners.setdefault(topic_id, {})
                for p in parts:
                    prev = owned.get(p)
                    # On a compacted log a partition may briefly appear twice; the newer
                    # (larger) epoch wins, as in Kafka's replay.
                    if prev is None or prev[0] == m.member_id or prev[1] <= m.member_epoch:
                        owned[p] = (m.member_id, m.member_epoch)

    def replay_regex(self, regex: str, value: Any | None) -> None:
        if value is None:
            self.regexes.pop(regex, None)
        else:
            self.regexes[regex] = ResolvedRegex(frozenset(value.topics), value.version,
                                                value.timestamp)

    # -- canonical durable state (replay equivalence) --------------------------------------
    def canonical(self) -> dict[str, Any]:
        return {
            "epoch": (self.group_epoch, self.metadata_hash),
            "assignment": (self.assignment_epoch, self.assignment_timestamp_ms),
            "members": dict(sorted(self.members.items())),
            "target": dict(sorted(self.target.items())),
            "regexes": dict(sorted(self.regexes.items())),
            "owners": {t: dict(sorted(ps.items())) for t, ps in sorted(self.owners.items())},
        }
