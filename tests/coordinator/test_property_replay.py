"""Property: random sequences of joins, syncs, heartbeats, leaves, commits and clock
advances keep three invariants.

1. Replay equivalence: a fresh shard fed every written record (encoded and decoded, as
   the log gives them back) has the same `snapshot()` as the live shard.
2. A live group in Stable or Empty equals its persisted GroupMetadata view.
3. In a Stable generation no partition is assigned to two members (the simulated leader
   assigns round robin; assignments are decoded from ConsumerProtocolAssignment bytes).
Generations never go back.
"""

from __future__ import annotations

from dataclasses import dataclass

from coord_harness import GROUP, Harness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.classic.consumer_protocol import decode_assignment, encode_assignment
from groupcoord.coordinator.classic.loading import canonical
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)

S = ClassicGroupState
PARTITIONS = 6
CLIENTS = 4


@dataclass
class Client:
    index: int
    member_id: str = ""
    generation: int = -1
    join_token: int | None = None
    sync_token: int | None = None
    leader_members: list[str] | None = None
    skip: bool = False
    version: int = 9

    @property
    def instance_id(self) -> str | None:
        # Two of the clients are static members.
        return f"inst-{self.index}" if self.index >= 2 else None


def poll(h: Harness, c: Client) -> bool:
    """Handle arrived replies like a real client would; True when something happened."""
    acted = False
    if c.join_token is not None and c.join_token in h.replies:
        r = h.replies.pop(c.join_token)
        c.join_token = None
        acted = True
        if r.error_code == E.NONE:
            c.member_id, c.generation = r.member_id, r.generation_id
            c.leader_members = [m.member_id for m in r.members] if r.leader == r.member_id \
                else None
            c.skip = r.skip_assignment
            send_sync(h, c)
        elif r.error_code == E.MEMBER_ID_REQUIRED:
            c.member_id = r.member_id
            send_join(h, c)
        elif r.error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            c.member_id, c.generation = "", -1
    if c.sync_token is not None and c.sync_token in h.replies:
        r = h.replies.pop(c.sync_token)
        c.sync_token = None
        acted = True
        if r.error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            c.member_id, c.generation = "", -1
        elif r.error_code in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
            send_join(h, c)
    return acted


def send_join(h: Harness, c: Client) -> None:
    if c.join_token is not None:
        return
    version = 9 if c.instance_id else c.version
    c.join_token, _ = h.join(member_id=c.member_id, version=version,
                             instance_id=c.instance_id, client_id=f"c{c.index}",
                             session_ms=10_000, rebalance_ms=20_000)


def send_sync(h: Harness, c: Client) -> None:
    if c.sync_token is not None or not c.member_id or c.generation < 0:
        return
    assignments = {}
    if c.leader_members and not c.skip:
        assignments = round_robin(c.leader_members)
    c.sync_token, _ = h.sync(c.member_id, c.generation, assignments, instance_id=c.instance_id)


def round_robin(members: list[str]) -> dict[str, bytes]:
    parts: dict[str, list[int]] = {m: [] for m in members}
    for p in range(PARTITIONS):
        parts[members[p % len(members)]].append(p)
    return {m: encode_assignment({"t": ps}) for m, ps in parts.items()}


def act(h: Harness, c: Client, action: str, arg: int) -> None:
    if action == "join" and not c.member_id:
        c.version = 3 + arg % 7
        send_join(h, c)
    elif action == "rejoin":
        send_join(h, c)
    elif action == "sync":
        send_sync(h, c)
    elif action == "heartbeat" and c.member_id and c.join_token is None and c.generation >= 0:
        error = h.heartbeat(c.member_id, c.generation, instance_id=c.instance_id)
        if error == E.REBALANCE_IN_PROGRESS:
            send_join(h, c)
        elif error in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            c.member_id, c.generation = "", -1
    elif action == "leave" and c.member_id:
        h.leave([(c.member_id, c.instance_id)])
        c.member_id, c.generation = "", -1
    elif action == "crash":
        c.member_id, c.generation, c.join_token, c.sync_token = "", -1, None, None
    elif action == "commit":
        h.commit({("t", arg % PARTITIONS): arg}, c.member_id, c.generation,
                 instance_id=c.instance_id)
    elif action == "advance":
        h.advance([1, 500, 1_000, 3_000, 3_000, 4_000, 11_000, 25_000][arg % 8])
    elif action == "cleanup":
        h.apply(h.shard.cleanup_expired_offsets(h.now))
    elif action == "delete":
        h.apply(h.shard.delete_groups([GROUP], h.now))
    elif action == "offset_delete":
        req = OffsetDeleteRequest(group_id=GROUP, topics=[OffsetDeleteRequestTopic(
            name="t", partitions=[OffsetDeleteRequestPartition(partition_index=arg % PARTITIONS)])])
        h.call("offset_delete", req, 0)


def live_view(group) -> tuple:
    members = tuple(
        (m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
         m.session_timeout_ms, m.metadata(group.protocol_name), m.assignment)
        for m in group.members.values())
    return (group.protocol_type or "", group.generation_id, group.protocol_name,
            group.leader_id, members)


def check(h: Harness, max_gen: list[int]) -> None:
    assert h.fresh_replay().snapshot() == h.shard.snapshot()
    group = h.shard.classic.get(GROUP)
    if group is None:
        max_gen[0] = 0  # deleted: a recreated group starts again at generation 0
        return
    assert group.generation_id >= max_gen[0]
    max_gen[0] = max(max_gen[0], group.generation_id)
    persisted = group.persisted
    if group.state is S.STABLE:
        assert live_view(group)[1:] == (persisted[1], persisted[2], persisted[3], persisted[5])
    elif group.state is S.EMPTY and persisted is not None:
        assert (persisted[1], persisted[5]) == (group.generation_id, ())
    if group.state is S.STABLE:
        owners: dict[int, str] = {}
        for m in group.members.values():
            for p in decode_assignment(m.assignment).get("t", []):
                assert p not in owners, f"partition {p} owned twice"
                owners[p] = m.member_id


ACTIONS = st.sampled_from(
    ["join", "join", "rejoin", "sync", "heartbeat", "heartbeat", "heartbeat", "heartbeat",
     "leave", "crash", "commit", "commit", "advance", "advance", "advance", "cleanup",
     "delete", "offset_delete"])
STEP = st.tuples(ACTIONS, st.integers(0, CLIENTS - 1), st.integers(0, 1_000))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=80))
def test_replay_equivalence_and_assignment_invariants(steps) -> None:
    h = Harness()
    clients = [Client(i) for i in range(CLIENTS)]
    max_gen = [0]
    for action, index, arg in steps:
        act(h, clients[index], action, arg)
        # Poll every client each round (no short-circuit) until nothing more happens.
        while sum(poll(h, c) for c in clients):
            pass
        check(h, max_gen)


def test_canonical_of_empty_record_is_comparable() -> None:
    h = Harness()
    h.join(version=9)
    value = h.log[0].value
    assert canonical(value) == ("", 0, None, None, value.current_state_timestamp, ())
