"""Scenarios of Kafka's ``UniformHeterogeneousAssignmentBuilderTest``, with its expected results."""

from __future__ import annotations

import pytest
from assignor_helpers import (
    T1,
    T2,
    T3,
    Topics,
    check_complete,
    group,
    kafka_uuid,
    member,
    normalized,
)

from groupcoord.coordinator.assignors import ASSIGNORS, PartitionAssignorError

UNIFORM = ASSIGNORS["uniform"]
T4 = kafka_uuid("T4-Tw9fVTLCz5HbPp6YQsa")


def run(spec, topics):
    assert not spec.homogeneous
    result = UNIFORM.assign(spec, topics)
    check_complete(spec, topics, result)
    return normalized(result)


def het(*members):
    return group(*members, homogeneous=False)


def test_two_members_no_topic_subscription():
    spec = het(member("A", []), member("B", []))
    assert UNIFORM.assign(spec, Topics({T1: 3})) == {"A": {}, "B": {}}


def test_two_members_subscribed_to_nonexistent_topics():
    spec = het(member("A", [T3]), member("B", [T2]))
    with pytest.raises(PartitionAssignorError):
        UNIFORM.assign(spec, Topics({T1: 3}))


def test_first_assignment_two_members_two_topics():
    spec = het(member("A", [T1, T3]), member("B", [T3]))
    assert run(spec, Topics({T1: 3, T3: 6})) == {
        "A": {T1: {0, 1, 2}, T3: {4}},
        "B": {T3: {0, 1, 2, 3, 5}},
    }


def test_first_assignment_num_members_greater_than_total_num_partitions():
    spec = het(member("A", [T3]), member("B", [T3]), member("C", [T1]))
    assert run(spec, Topics({T1: 2, T3: 1})) == {
        "A": {T3: {0}},
        "B": {},
        "C": {T1: {0, 1}},
    }


def test_reassignment_for_two_members_three_topics_given_unbalanced_prev_assignment():
    spec = het(
        member("A", [T1], {T1: [0, 1, 2]}),
        member("B", [T1, T2], {T1: [3], T2: [0]}),
        member("C", [T1, T2, T3], {T1: [4, 5], T2: [1, 2, 3], T3: [0, 1, 2, 3]}),
    )
    assert run(spec, Topics({T1: 6, T2: 4, T3: 4})) == {
        "A": {T1: {0, 1, 2, 5}},
        "B": {T1: {3}, T2: {0, 1, 2, 3}},
        "C": {T1: {4}, T3: {0, 1, 2, 3}},
    }


def test_reassignment_when_partitions_are_added_for_two_members():
    spec = het(
        member("A", [T1, T3], {T1: [0, 1, 2, 3], T3: [0, 1]}),
        member("B", [T1, T2, T3, T4], {T2: [0, 1, 2], T4: [0, 1, 2]}),
    )
    assert run(spec, Topics({T1: 6, T2: 5, T3: 3, T4: 3})) == {
        "A": {T1: {0, 1, 2, 3, 4, 5}, T3: {0, 1, 2}},
        "B": {T2: {0, 1, 2, 3, 4}, T4: {0, 1, 2}},
    }


def test_reassignment_when_one_member_added_and_partitions_added():
    spec = het(
        member("A", [T1], {T1: [0, 2], T2: [0]}),
        member("B", [T1, T2], {T1: [1], T2: [1, 2]}),
        member("C", [T1, T2]),
    )
    assert run(spec, Topics({T1: 6, T2: 7})) == {
        "A": {T1: {0, 2, 3, 4, 5}},
        "B": {T1: {1}, T2: {1, 2, 6}},
        "C": {T2: {0, 3, 4, 5}},
    }


def test_reassignment_when_one_member_removed_three_members_three_topics():
    spec = het(
        member("A", [T1, T3], {T1: [0, 1, 2], T3: [0, 1]}),
        member("B", [T2], {T2: [3, 4, 5, 6]}),
    )
    assert run(spec, Topics({T1: 3, T2: 8, T3: 3})) == {
        "A": {T1: {0, 1, 2}, T3: {0, 1, 2}},
        "B": {T2: set(range(8))},
    }


def test_reassignment_when_one_subscription_removed():
    spec = het(
        member("A", [T1], {T1: [0, 2], T2: [1, 3]}),
        member("B", [T1, T2], {T1: [1], T2: [0, 2, 4]}),
    )
    assert run(spec, Topics({T1: 3, T2: 5})) == {
        "A": {T1: {0, 1, 2}},
        "B": {T2: {0, 1, 2, 3, 4}},
    }


def test_reassignment_when_topic_partitions_run_out_and_members_have_no_partitions():
    spec = het(
        member("A", [T1, T2, T3], {T1: [0, 1], T2: [0, 1], T3: [0, 1]}),
        member("B", [T1, T2, T3]),
    )
    assert run(spec, Topics({T1: 2, T2: 2, T3: 2})) == {
        "A": {T2: {0}, T3: {0, 1}},
        "B": {T1: {0, 1}, T2: {1}},
    }


def test_first_assignment_with_two_members_including_one_without_subscriptions():
    spec = het(member("A", [T1]), member("B", []))
    assert run(spec, Topics({T1: 3})) == {"A": {T1: {0, 1, 2}}, "B": {}}


def test_overlapping_subscriptions_stay_nearly_balanced():
    """Kafka's balanceTopics example: chains of overlapping subscribers end close to even."""
    spec = het(member("A", [T1]), member("B", [T1, T2]), member("C", [T2]))
    topics = Topics({T1: 15, T2: 15})
    counts = sorted(len(a.get(T1, ())) + len(a.get(T2, ())) for a in run(spec, topics).values())
    assert counts[-1] - counts[0] <= 2
