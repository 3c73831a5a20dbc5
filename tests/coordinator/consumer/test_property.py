"""Property tests: random member lifecycles against one consumer group.

Simulated clients follow the protocol: a new assignment adds partitions at once, but a
revoked partition stays in use until the client's next heartbeat (its revocation callback
runs in between), and heartbeats report what the client owns. After every step:
- the broker never has a partition in two members' assigned/revoking sets at once;
- no two live clients believe they own the same partition (revocation happens before
  reassignment);
- the group epoch never goes back, and assignment epoch <= group epoch.
At the end, replaying the written records rebuilds exactly the live state.
"""

from __future__ import annotations

from typing import Any

from cg_harness import CgHarness, tid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.wire.errors import ErrorCode as E

SUBSCRIPTIONS = [["foo"], ["foo", "bar"], ["bar"]]
TOPIC_SETS = [{"foo": 6, "bar": 3}, {"foo": 8, "bar": 3}, {"foo": 8, "bar": 3, "baz": 2}]
CLIENTS = 6
STATIC = {4: "i-4", 5: "i-5"}

ops = st.lists(st.one_of(
    st.tuples(st.just("join"), st.integers(0, CLIENTS - 1), st.integers(0, 3),
              st.sampled_from(["uniform", "range"])),
    st.tuples(st.just("hb"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("hb"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("hb"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("leave"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("tick"), st.sampled_from([1_000, 20_000, 46_000])),
    st.tuples(st.just("topics"), st.integers(0, len(TOPIC_SETS) - 1)),
), max_size=60)


class Client:
    def __init__(self, idx: int) -> None:
        self.idx = idx
        self.member_id = f"c{idx}"
        self.epoch = -1          # -1: not joined
        self.owned: dict[bytes, frozenset[int]] = {}     # in use (and reported)
        self.next_owned: dict[bytes, frozenset[int]] | None = None

    def reset(self) -> None:
        self.epoch, self.owned, self.next_owned = -1, {}, None

    def finish_revocation(self) -> None:
        if self.next_owned is not None:
            self.owned, self.next_owned = self.next_owned, None


def _owned_arg(c: Client) -> dict[str, list[int]]:
    names = {tid(n): n for n in ("foo", "bar", "baz")}
    return {names[t]: sorted(ps) for t, ps in c.owned.items()}


def _apply_response(c: Client, resp: Any) -> None:
    if resp.error_code != E.NONE:
        c.reset()   # fenced or unknown: abandon everything and rejoin later
        return
    c.epoch = resp.member_epoch
    if resp.assignment is not None:
        new = {bytes(tp.topic_id): frozenset(tp.partitions)
               for tp in resp.assignment.topic_partitions if tp.partitions}
        # Newly assigned partitions are used at once; revoked ones until the next heartbeat.
        merged = dict(c.owned)
        for t, ps in new.items():
            merged[t] = merged.get(t, frozenset()) | ps
        c.owned, c.next_owned = merged, new


def _step(h: CgHarness, clients: list[Client], op: tuple) -> None:
    kind = op[0]
    if kind == "join":
        c = clients[op[1]]
        if c.epoch < 0:
            sub = SUBSCRIPTIONS[op[2]] if op[2] < 3 else None
            regex = "ba.*" if sub is None else None
            _apply_response(c, h.hb(c.member_id, 0, topics=sub, regex=regex,
                                    instance_id=STATIC.get(c.idx), assignor=op[3]))
    elif kind == "hb":
        c = clients[op[1]]
        if c.epoch >= 0:
            c.finish_revocation()
            _apply_response(c, h.hb(c.member_id, c.epoch, owned=_owned_arg(c),
                                    instance_id=STATIC.get(c.idx)))
    elif kind == "leave":
        c = clients[op[1]]
        if c.epoch >= 0:
            static = STATIC.get(c.idx)
            h.hb(c.member_id, -2 if static else -1, instance_id=static)
            c.reset()
            if static:  # a restarted static member comes back under a new id
                c.member_id += "'"
    elif kind == "tick":
        h.advance(op[1])
    else:
        h.set_topics(TOPIC_SETS[op[1]])


def _check(h: CgHarness, clients: list[Client], last_epoch: list[int]) -> None:
    group = h.shard.consumer.groups.get("cg")
    if group is None:
        return
    seen: dict[tuple[bytes, int], str] = {}
    for m in group.members.values():
        for assignment in (m.assigned, m.pending_revocation):
            for t, ps in assignment.items():
                for p in ps:
                    assert (t, p) not in seen, f"{(t, p)} owned by {seen[(t, p)]} and {m.member_id}"
                    seen[(t, p)] = m.member_id
    believed: dict[tuple[bytes, int], str] = {}
    for c in clients:
        if c.member_id not in group.members:
            continue  # a fenced client learns it on its next heartbeat
        for t, ps in c.owned.items():
            for p in ps:
                assert (t, p) not in believed, f"{(t, p)} believed by {believed[(t, p)]} and {c.member_id}"
                believed[(t, p)] = c.member_id
                assert seen.get((t, p)) == c.member_id
    assert group.group_epoch >= last_epoch[0]
    assert group.assignment_epoch <= group.group_epoch
    last_epoch[0] = group.group_epoch


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_exclusive_ownership_and_replay_equivalence(script: list[tuple]) -> None:
    config = GroupCoordinatorConfig(group_consumer_regex_batch_refresh_min_interval_ms=0)
    h = CgHarness(config, topics=TOPIC_SETS[0])
    clients = [Client(i) for i in range(CLIENTS)]
    last_epoch = [0]
    for op in script:
        _step(h, clients, op)
        _check(h, clients, last_epoch)
    replayed = h.fresh_replay()
    assert replayed.snapshot() == h.shard.snapshot()
