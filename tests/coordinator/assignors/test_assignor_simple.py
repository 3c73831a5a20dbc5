"""Scenarios of Kafka's ``SimpleAssignorTest`` (share groups), with its expected results."""

from __future__ import annotations

import pytest
from assignor_helpers import T1, T2, T3, Topics, check_valid, group, kafka_uuid, member, normalized

from groupcoord.coordinator.assignors import ASSIGNORS, PartitionAssignorError

SIMPLE = ASSIGNORS["simple"]
T4 = kafka_uuid("T4-Tw9fVTLCz5HbPp6YQsa")


def allowed(table):
    """An ``assignable`` predicate from Kafka's topicAssignablePartitionsMap."""
    return lambda topic_id, p: p in table.get(topic_id, ())


def distinct_partitions(result) -> int:
    return len({(t, p) for a in result.values() for t, ps in a.items() for p in ps})


def test_name():
    assert SIMPLE.name == "simple"


def test_assign_with_empty_members():
    assert SIMPLE.assign(group(), Topics({T1: 3})) == {}


def test_assign_with_no_subscribed_topic():
    assert SIMPLE.assign(group(member("A", [])), Topics({T1: 3})) == {"A": {}}


def test_assign_with_subscribed_to_non_existent_topic():
    with pytest.raises(PartitionAssignorError):
        SIMPLE.assign(group(member("A", [T2])), Topics({T1: 3}))


def test_two_members_two_topics_homogeneous():
    spec = group(member("A", [T1, T3]), member("B", [T1, T3]))
    result = SIMPLE.assign(spec, Topics({T1: 3, T3: 2}))
    assert distinct_partitions(result) == 5
    assert sorted(sum(map(len, a.values())) for a in result.values()) == [2, 3]


def test_two_members_two_topics_homogeneous_with_allowed_map():
    spec = group(member("A", [T1, T3]), member("B", [T1, T3]))
    result = SIMPLE.assign(
        spec, Topics({T1: 3, T3: 3}), assignable=allowed({T1: {0, 1, 2}, T3: {0, 1}})
    )
    assert distinct_partitions(result) == 5
    assert 2 not in result["A"].get(T3, set()) | result["B"].get(T3, set())


def test_two_members_two_topics_homogeneous_with_non_assignable_topic():
    spec = group(member("A", [T1, T3]), member("B", [T1, T3]))
    result = SIMPLE.assign(spec, Topics({T1: 3, T3: 2}), assignable=allowed({T1: {0, 1, 2}}))
    assert distinct_partitions(result) == 3
    assert all(T3 not in a for a in result.values())


def _three_members():
    return group(member("A", [T1, T2]), member("B", [T3]), member("C", [T2, T3]))


def test_three_members_three_topics_heterogeneous():
    result = SIMPLE.assign(_three_members(), Topics({T1: 3, T2: 3, T3: 2}))
    check_valid(_three_members(), Topics({T1: 3, T2: 3, T3: 2}), result)
    assert distinct_partitions(result) == 8


def test_three_members_three_topics_heterogeneous_with_allowed_map():
    table = {T1: {0, 1}, T2: {0, 2}, T3: {1}}
    result = SIMPLE.assign(
        _three_members(), Topics({T1: 3, T2: 3, T3: 2}), assignable=allowed(table)
    )
    assert distinct_partitions(result) == 5


def test_three_members_three_topics_heterogeneous_with_non_assignable_topic():
    table = {T1: {0, 1, 2}, T2: {0, 1, 2}}
    result = SIMPLE.assign(
        _three_members(), Topics({T1: 3, T2: 3, T3: 2}), assignable=allowed(table)
    )
    assert normalized(result) == {
        "A": {T1: {0, 1, 2}, T2: {0, 2}},
        "B": {},
        "C": {T2: {1}},
    }


def test_one_member_no_assigned_topic_heterogeneous():
    spec = group(member("A", [T1, T2]), member("B", []))
    assert normalized(SIMPLE.assign(spec, Topics({T1: 3, T2: 2}))) == {
        "A": {T1: {0, 1, 2}, T2: {0, 1}},
        "B": {},
    }


def _grow_then_shrink(subscriptions, topics, homogeneous):
    """Kafka's incremental tests: add 101 members one at a time, then remove them again;
    every partition stays assigned throughout."""
    total = sum(topics.counts.values())
    current: dict[str, dict] = {}

    def step(ids):
        spec = group(
            *(member(m, subscriptions(int(m[1:])), current.get(m, {})) for m in ids),
            homogeneous=homogeneous,
        )
        result = SIMPLE.assign(spec, topics)
        check_valid(spec, topics, result, exclusive=False)
        assert distinct_partitions(result) == total
        _check_share_balance(spec, topics, result)
        current.clear()
        current.update(result)

    for n in range(1, 102):
        step([f"M{i}" for i in range(n)])
    for n in range(100, 0, -1):
        step([f"M{i}" for i in range(n)])


def _check_share_balance(spec, topics, result):
    if not spec.homogeneous:
        return
    counts = [sum(map(len, a.values())) for a in result.values()]
    assert max(counts) - min(counts) <= 1


def test_incremental_assignment_homogeneous():
    _grow_then_shrink(lambda i: [T1], Topics({T1: 24}), homogeneous=True)


def test_incremental_assignment_heterogeneous():
    subs = [[T1, T2, T3], [T2], [T3], [T1, T2]]
    _grow_then_shrink(lambda i: subs[i % 4], Topics({T1: 12, T2: 8, T3: 4}), homogeneous=False)


def test_assign_with_current_assignment_heterogeneous():
    topics = Topics({T1: 3, T2: 3, T3: 2, T4: 1})
    spec = group(
        member("A", [T1, T2, T3], {T1: [0, 1, 2], T2: [0, 2]}),
        member("B", [T3, T4], {T3: [0, 1]}),
        homogeneous=False,
    )
    result = SIMPLE.assign(spec, topics)
    check_valid(spec, topics, result, exclusive=False)
    assert distinct_partitions(result) == 9


def test_members_share_partitions_when_more_members_than_partitions():
    spec = group(*(member(m, [T1]) for m in "ABCDE"))
    result = SIMPLE.assign(spec, Topics({T1: 2}))
    holders = [sum(p in a.get(T1, ()) for a in result.values()) for p in (0, 1)]
    assert holders == [3, 3]  # desired sharing ceil(5 / 2)
    assert all(result[m] for m in "ABCDE")


def test_sticky_when_a_member_joins():
    topics = Topics({T1: 6})
    first = SIMPLE.assign(group(member("A", [T1]), member("B", [T1])), topics)
    spec = group(member("A", [T1], first["A"]), member("B", [T1], first["B"]), member("C", [T1]))
    second = SIMPLE.assign(spec, topics)
    assert second["A"][T1] <= first["A"][T1]
    assert second["B"][T1] <= first["B"][T1]
    assert len(second["C"][T1]) == 2
