"""Classic group and member data (`ClassicGroup`, `ClassicGroupMember`).

The group object holds two kinds of data. `persisted` is the last GroupMetadataValue
replayed for the group: durable, set only by `replay`. Everything else is the live
rebalance state which Kafka also mutates directly for classic groups (its classic
JoinGroup/SyncGroup results are appended with `replayRecords=false`): members while they
join, parked reply tokens, pending members. When the group is Stable or Empty the live
view equals `persisted`.

Members are kept in insertion order, which makes leader re-election and the protocol vote
deterministic where Kafka follows HashMap order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from groupcoord.coordinator.classic import consumer_protocol
from groupcoord.coordinator.classic.state import (
    CAN_REBALANCE,
    ClassicGroupState,
    check_transition,
)
from groupcoord.logformat.generated.group_metadata import MemberMetadata

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(slots=True)
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    # Parked JoinGroup: reply token and request version (None = not awaiting join).
    join_token: int | None = None
    join_version: int = 0
    sync_token: int | None = None
    sync_version: int = 0
    is_new: bool = False
    # Soft: when the session timer is due; an earlier fire is stale and ignored.
    heartbeat_deadline_ms: int = 0

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_token is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_token is not None

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def has_satisfied_heartbeat(self) -> bool:
        # New members can expire while their join is parked; others awaiting a rebalance
        # response are considered alive (`ClassicGroupMember.hasSatisfiedHeartbeat`).
        if self.is_new:
            return False
        return self.awaiting_join or self.awaiting_sync

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError("member supports no candidate protocol")


@dataclass(slots=True)
class ClassicGroup:
    group_id: str
    state: ClassicGroupState = ClassicGroupState.EMPTY
    previous_state: ClassicGroupState | None = None
    state_timestamp_ms: int = -1
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, ClassicGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    # Members told MEMBER_ID_REQUIRED -> their session deadline.
    pending_join_members: dict[str, int] = field(default_factory=dict)
    pending_sync_members: dict[str, None] = field(default_factory=dict)
    new_member_added: bool = False
    subscribed_topics: frozenset[str] | None = None
    # Soft timer state: the initial-delay schedule (delay, remaining) while it runs, and
    # the generation the sync timer was armed for.
    initial_delay: tuple[int, int] | None = None
    sync_timer_generation: int | None = None
    join_deadline_ms: int = 0
    sync_deadline_ms: int = 0
    # Durable: the last GroupMetadataValue replayed, as a canonical tuple (None = simple
    # group known only through its offsets).
    persisted: tuple | None = None

    # -- state -------------------------------------------------------------------------
    def transition_to(self, target: ClassicGroupState, now_ms: int) -> None:
        check_transition(self.state, target)
        self.previous_state = self.state
        self.state = target
        self.state_timestamp_ms = now_ms

    def is_in(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return self.state in CAN_REBALANCE

    # -- membership ----------------------------------------------------------------------
    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_pending(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def has_all_members_joined(self) -> bool:
        return (self.num_awaiting_join() == len(self.members)
                and not self.pending_join_members)

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def add(self, member: ClassicGroupMember) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_join_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> None:
        removed = self.members.pop(member_id, None)
        if removed is not None and removed.group_instance_id is not None:
            self.static_members.pop(removed.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.pop(member_id, None)
        self.pending_sync_members.pop(member_id, None)

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str
                              ) -> tuple[ClassicGroupMember, ClassicGroupMember]:
        """Re-register a static member under a new id; returns (old, new)."""
        old = self.members.pop(old_id)
        new = ClassicGroupMember(
            member_id=new_id, group_instance_id=old.group_instance_id,
            client_id=old.client_id, client_host=old.client_host,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            session_timeout_ms=old.session_timeout_ms, protocol_type=old.protocol_type,
            protocols=list(old.protocols), assignment=old.assignment)
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        self.pending_sync_members.pop(old_id, None)
        return old, new

    # -- protocols -----------------------------------------------------------------------
    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.state is ClassicGroupState.EMPTY:
            return protocol_type != "" and len(names) > 0
        if self.protocol_type != protocol_type:
            return False
        return any(self._support_count(n) == len(self.members) for n in names)

    def _support_count(self, name: str) -> int:
        return sum(1 for m in self.members.values() if any(p == name for p, _ in m.protocols))

    def select_protocol(self) -> str:
        """The protocol most members vote for among those every member supports."""
        candidates = self._candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        # Ties go to the earliest vote: deterministic where Kafka's is unspecified.
        return max(votes, key=lambda n: votes[n])

    def _candidate_protocols(self) -> set[str]:
        sets = [{p for p, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(consumer_protocol.subscription_topics(m.metadata(self.protocol_name)))
        except consumer_protocol.ProtocolParseError:
            return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return self.subscribed_topics is not None and topic in self.subscribed_topics

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(ClassicGroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(ClassicGroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def elect_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick the first member that did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for m in self.members.values():
            if m.awaiting_join:
                self.leader_id = m.member_id
                return True
        return False

    # -- records ----------------------------------------------------------------------
    def member_records(self, assignments: dict[str, bytes] | None = None
                       ) -> list[MemberMetadata]:
        return [
            MemberMetadata(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(self.protocol_name),
                assignment=(m.assignment if assignments is None
                            else assignments.get(m.member_id, b"")),
            )
            for m in self.members.values()
        ]
