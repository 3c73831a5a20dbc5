"""Scenarios of Kafka's ``UniformHomogeneousAssignmentBuilderTest``, with its expected results."""

from __future__ import annotations

import pytest
from assignor_helpers import (
    T1,
    T2,
    T3,
    Topics,
    check_balanced_homogeneous,
    check_complete,
    group,
    kafka_uuid,
    member,
    normalized,
)

from groupcoord.coordinator.assignors import ASSIGNORS, PartitionAssignorError

UNIFORM = ASSIGNORS["uniform"]


def run(spec, topics):
    result = UNIFORM.assign(spec, topics)
    check_complete(spec, topics, result)
    check_balanced_homogeneous(result)
    return normalized(result)


def test_one_member_no_topic_subscription():
    spec = group(member("A", []))
    assert UNIFORM.assign(spec, Topics({T1: 3})) == {"A": {}}


def test_one_member_subscribed_to_nonexistent_topic():
    spec = group(member("A", [T2]))
    with pytest.raises(PartitionAssignorError):
        UNIFORM.assign(spec, Topics({T1: 3}))


def test_first_assignment_two_members_two_topics_no_member_racks():
    spec = group(member("A", [T1, T3]), member("B", [T1, T3]))
    # Kafka walks topics in Java HashSet order, which puts T3 before T1 for these ids.
    assert run(spec, Topics({T1: 3, T3: 2})) == {"A": {T3: {0, 1}}, "B": {T1: {0, 1, 2}}}


def test_first_assignment_num_members_greater_than_total_num_partitions():
    spec = group(member("A", [T3]), member("B", [T3]), member("C", [T3]))
    assert run(spec, Topics({T3: 2})) == {"A": {}, "B": {T3: {0}}, "C": {T3: {1}}}


def test_validity_and_balance_for_large_sample_set():
    topic_ids = [kafka_uuid(f"topic{i:03d}-AAAAAAAAAAAAAA"[:22]) for i in range(1, 101)]
    spec = group(*(member(f"member{i}", topic_ids) for i in range(1, 50)))
    run(spec, Topics(dict.fromkeys(topic_ids, 3)))


def test_reassignment_for_two_members_two_topics_given_unbalanced_prev_assignment():
    spec = group(
        member("A", [T1, T2], {T1: [0, 1], T2: [0, 1]}),
        member("B", [T1, T2], {T1: [2], T2: [2]}),
    )
    assert run(spec, Topics({T1: 3, T2: 3})) == {
        "A": {T1: {0, 1}, T2: {0}},
        "B": {T1: {2}, T2: {1, 2}},
    }


def test_reassignment_when_partitions_are_added_for_two_members_two_topics():
    spec = group(
        member("A", [T1, T2], {T1: [0, 2], T2: [0]}),
        member("B", [T1, T2], {T1: [1], T2: [1, 2]}),
    )
    assert run(spec, Topics({T1: 6, T2: 5})) == {
        "A": {T1: {0, 2}, T2: {0, 3, 4}},
        "B": {T1: {1, 3, 4, 5}, T2: {1, 2}},
    }


def test_reassignment_when_one_member_added_after_initial_assignment():
    spec = group(
        member("A", [T1, T2], {T1: [0, 2], T2: [0]}),
        member("B", [T1, T2], {T1: [1], T2: [1, 2]}),
        member("C", [T1, T2]),
    )
    assert run(spec, Topics({T1: 3, T2: 3})) == {
        "A": {T1: {0, 2}},
        "B": {T1: {1}, T2: {1}},
        "C": {T2: {0, 2}},
    }


def test_reassignment_when_one_member_removed_after_initial_assignment():
    spec = group(
        member("A", [T1, T2], {T1: [0], T2: [0]}),
        member("B", [T1, T2], {T1: [1], T2: [1]}),
    )
    assert run(spec, Topics({T1: 3, T2: 3})) == {
        "A": {T1: {0}, T2: {0, 2}},
        "B": {T1: {1, 2}, T2: {1}},
    }


def test_reassignment_when_one_subscription_removed_after_initial_assignment():
    spec = group(
        member("A", [T2], {T1: [0], T2: [0]}),
        member("B", [T2], {T1: [1], T2: [1]}),
    )
    assert run(spec, Topics({T1: 2, T2: 2})) == {"A": {T2: {0}}, "B": {T2: {1}}}


def test_assignment_reuse_when_nothing_changes():
    """Kafka's testAssignmentReuse: a balanced assignment is returned unchanged."""
    spec = group(member("A", [T1, T2]), member("B", [T1, T2]), member("C", [T1, T2]))
    topics = Topics({T1: 7, T2: 5})
    first = run(spec, topics)
    again = group(*(member(m, [T1, T2], first[m]) for m in ("A", "B", "C")))
    assert run(again, topics) == first


def _owners(result):
    return {(t, p): m for m, a in result.items() for t, ps in a.items() for p in ps}


def test_one_member_joining_or_leaving_moves_only_what_it_must():
    topic_ids = [T1, T2, T3]
    topics = Topics({T1: 101, T2: 37, T3: 365})
    ids = [f"m{i:02d}" for i in range(50)]
    base = run(group(*(member(m, topic_ids) for m in ids)), topics)

    joined = run(
        group(*(member(m, topic_ids, base[m]) for m in ids), member("new", topic_ids)), topics
    )
    before, after = _owners(base), _owners(joined)
    moved = [tp for tp in after if after[tp] != before[tp]]
    assert len(moved) == sum(len(ps) for ps in joined["new"].values()) == 503 // 51

    left = run(group(*(member(m, topic_ids, base[m]) for m in ids[1:])), topics)
    after = _owners(left)
    moved = [tp for tp in after if after[tp] != before[tp]]
    assert sorted(moved) == sorted((t, p) for t, ps in base["m00"].items() for p in ps)
