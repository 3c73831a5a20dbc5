"""Property tests of the assignors over random groups, subscriptions and current targets."""

from __future__ import annotations

from assignor_helpers import (
    Topics,
    check_complete,
    check_valid,
    group,
    member,
    normalized,
    sizes,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.assignors import ASSIGNORS, GroupSpec

TOPIC_IDS = [bytes([i]) * 16 for i in range(1, 5)] + [bytes([0x80 + i]) * 16 for i in range(2)]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def scenarios(draw, homogeneous: bool | None = None, exclusive: bool = True):
    """A group (members, subscriptions, current targets) and its topic metadata.

    Current targets may name unsubscribed topics, partitions beyond the topic's size and,
    when ``exclusive`` is false, partitions held by several members.
    """
    topic_ids = draw(st.lists(st.sampled_from(TOPIC_IDS), min_size=1, max_size=4, unique=True))
    counts = {t: draw(st.integers(0, 12)) for t in topic_ids}
    num_members = draw(st.integers(1, 7))
    homogeneous = draw(st.booleans()) if homogeneous is None else homogeneous
    shared = frozenset(draw(st.lists(st.sampled_from(topic_ids), unique=True)))
    subs = [
        shared
        if homogeneous
        else frozenset(draw(st.lists(st.sampled_from(topic_ids), unique=True)))
        for _ in range(num_members)
    ]
    current: list[dict[bytes, set[int]]] = [{} for _ in range(num_members)]
    for t, n in counts.items():
        for p in range(n + 2):
            owners = draw(st.lists(st.integers(-num_members, num_members - 1), max_size=2))
            owners = [o for o in owners if o >= 0][: 1 if exclusive else 2]
            for o in owners:
                current[o].setdefault(t, set()).add(p)
    ids = draw(st.permutations([f"m{i}" for i in range(num_members)]))
    statics = draw(st.lists(st.booleans(), min_size=num_members, max_size=num_members))
    members = [
        member(ids[i], subs[i], current[i], instance_id=f"i{ids[i]}" if statics[i] else None)
        for i in range(num_members)
    ]
    return group(*members, homogeneous=homogeneous), Topics(counts)


def rebuilt(spec: GroupSpec) -> GroupSpec:
    """An equal spec made of new objects."""
    return group(
        *(
            member(m.member_id, set(m.subscribed_topic_ids), dict(m.assignment), m.instance_id)
            for m in spec.members.values()
        ),
        homogeneous=spec.homogeneous,
    )


def held(spec: GroupSpec, topics: Topics) -> dict[str, set[tuple[bytes, int]]]:
    """What each member may keep: subscribed, existing, not held by an earlier member."""
    seen: set[tuple[bytes, int]] = set()
    out = {}
    for m in spec.members.values():
        mine = set()
        for t, ps in m.assignment.items():
            if t in m.subscribed_topic_ids:
                mine |= {(t, p) for p in ps if p < topics.counts[t] and (t, p) not in seen}
        seen |= mine
        out[m.member_id] = mine
    return out


def flat(assignment) -> set[tuple[bytes, int]]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


@SETTINGS
@given(scenarios(exclusive=False), st.sampled_from(["uniform", "range"]))
def test_every_subscribed_partition_assigned_exactly_once(scenario, name):
    spec, topics = scenario
    result = ASSIGNORS[name].assign(spec, topics)
    check_complete(spec, topics, result)
    assert list(result) == list(spec.members)
    assert ASSIGNORS[name].assign(rebuilt(spec), topics) == result  # deterministic


@SETTINGS
@given(scenarios(homogeneous=True, exclusive=False))
def test_uniform_homogeneous_is_balanced_and_maximally_sticky(scenario):
    spec, topics = scenario
    result = ASSIGNORS["uniform"].assign(spec, topics)
    counts = sizes(result)
    assert max(counts.values()) - min(counts.values()) <= 1
    total = sum(counts.values())
    min_quota, extras = divmod(total, len(spec.members))
    valid = [len(v) for v in held(spec, topics).values()]
    # The most any balanced assignment can keep: everyone keeps up to the minimum quota and
    # the extra slots go to members that hold more than that.
    best = sum(min(v, min_quota) for v in valid) + min(extras, sum(v > min_quota for v in valid))
    kept = sum(len(flat(result[m]) & mine) for m, mine in held(spec, topics).items())
    assert kept == best


@SETTINGS
@given(scenarios(exclusive=False), st.sampled_from(["uniform", "range"]))
def test_assignment_is_stable(scenario, name):
    """Feeding a result back in returns it unchanged (uniform keeps a balanced target)."""
    spec, topics = scenario
    first = ASSIGNORS[name].assign(spec, topics)
    again = group(
        *(
            member(m.member_id, m.subscribed_topic_ids, first[m.member_id], m.instance_id)
            for m in spec.members.values()
        ),
        homogeneous=spec.homogeneous,
    )
    assert ASSIGNORS[name].assign(again, topics) == first


@SETTINGS
@given(scenarios(homogeneous=False, exclusive=False))
def test_uniform_heterogeneous_balances_every_topic(scenario):
    """Kafka's stopping rule, once converged: no partition of a topic can move from one of
    its subscribers to another and narrow the gap, i.e. every holder of the topic is at most
    one partition above the topic's least-loaded subscriber."""
    spec, topics = scenario
    result = ASSIGNORS["uniform"].assign(spec, topics)
    loads = sizes(result)
    for t in topics.counts:
        subscribers = [m for m, s in spec.members.items() if t in s.subscribed_topic_ids]
        holders = [m for m in subscribers if result[m].get(t)]
        if len(subscribers) >= 2 and holders:
            assert max(loads[m] for m in holders) - min(loads[m] for m in subscribers) <= 1


@SETTINGS
@given(scenarios(homogeneous=False))
def test_uniform_heterogeneous_moves_only_to_balance(scenario):
    """A member loses a partition it may keep only to a member that ends up at most one
    partition more loaded.

    "Only to a less loaded member" is too strong for Kafka's algorithm: a move is decided by
    the loads at the time it is made, and a later topic's balancing can lighten the giver
    further.  In ``test_uniform_heterogeneous_later_topic_lightens_giver`` m0 gives a
    partition of t2 to m2 while m0 holds 3 and m2 1, then gives t1's only partition to m1,
    ending with 1 against m2's 2; moving the t2 partition back would only swap the loads.
    What holds is the per-topic rule the balancing loop converges to (see
    ``test_uniform_heterogeneous_balances_every_topic``): the new owner holds the topic and
    the loser subscribes to it, so the owner ends at most one above the loser.
    """
    spec, topics = scenario
    result = ASSIGNORS["uniform"].assign(spec, topics)
    loads = sizes(result)
    owner = {tp: m for m, a in result.items() for tp in flat(a)}
    for m, mine in held(spec, topics).items():
        for tp in mine - flat(result[m]):
            assert loads[owner[tp]] <= loads[m] + 1


def test_uniform_heterogeneous_later_topic_lightens_giver():
    """Kafka's result: balancing t2 (3 vs 1) moves t2-1 from m0 to m2, then balancing t1
    (subscribers at 2, 0, 2) moves t1-0 from m0 to m1, leaving m0 one below m2."""
    t1, t2, t3, t4 = TOPIC_IDS[:4]
    spec = group(
        member("m0", {t1, t2, t3, t4}, {t1: {0}, t2: {1}}),
        member("m1", {t1}),
        member("m2", {t1, t2}),
    )
    result = ASSIGNORS["uniform"].assign(spec, Topics({t1: 1, t2: 2, t3: 0, t4: 1}))
    assert normalized(result) == {"m0": {t4: {0}}, "m1": {t1: {0}}, "m2": {t2: {0, 1}}}


@SETTINGS
@given(scenarios(exclusive=False))
def test_range_contiguous_and_balanced_per_topic(scenario):
    spec, topics = scenario
    result = ASSIGNORS["range"].assign(spec, topics)
    for t in topics.counts:
        got = [
            sorted(result[m].get(t, ()))
            for m, s in spec.members.items()
            if t in s.subscribed_topic_ids
        ]
        if not got:
            continue
        lengths = [len(g) for g in got]
        assert max(lengths) - min(lengths) <= 1
        for g in got:
            assert not g or g == list(range(g[0], g[0] + len(g)))
    if spec.homogeneous:
        # Co-partitioning: topics of equal size give a member the same partition numbers.
        for m in spec.members:
            by_size: dict[int, set[frozenset[int]]] = {}
            for t in spec.members[m].subscribed_topic_ids:
                by_size.setdefault(topics.counts[t], set()).add(frozenset(result[m].get(t, ())))
            assert all(len(v) == 1 for v in by_size.values())


@SETTINGS
@given(scenarios(exclusive=False), st.integers(0, 3))
def test_simple_share_assignment(scenario, modulus):
    spec, topics = scenario

    def assignable(t: bytes, p: int) -> bool:
        return modulus == 0 or p % (modulus + 1) != 0

    result = ASSIGNORS["simple"].assign(spec, topics, assignable=assignable)
    check_valid(spec, topics, result, exclusive=False)
    assert all(assignable(t, p) for a in result.values() for t, ps in a.items() for p in ps)
    subscribed = set().union(*(m.subscribed_topic_ids for m in spec.members.values()))
    wanted = {(t, p) for t in subscribed for p in range(topics.counts[t]) if assignable(t, p)}
    assert set().union(*(flat(a) for a in result.values())) == wanted
    if spec.homogeneous and len(spec.members) <= len(wanted):
        check_valid(spec, topics, result, exclusive=True)
        counts = sizes(result).values()
        assert max(counts) - min(counts) <= 1
    assert ASSIGNORS["simple"].assign(rebuilt(spec), topics, assignable=assignable) == result
