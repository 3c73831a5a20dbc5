"""Scenarios of Kafka's ``RangeAssignorTest``, with its expected results."""

from __future__ import annotations

import pytest
from assignor_helpers import T1, T2, T3, Topics, check_complete, group, member, normalized

from groupcoord.coordinator.assignors import ASSIGNORS, PartitionAssignorError

RANGE = ASSIGNORS["range"]


def run(spec, topics):
    result = RANGE.assign(spec, topics)
    check_complete(spec, topics, result)
    assert list(result) == list(spec.members)
    return normalized(result)


def test_one_member_no_topic():
    assert RANGE.assign(group(member("A", [])), Topics({T1: 3})) == {"A": {}}


def test_one_member_subscribed_to_nonexistent_topic():
    with pytest.raises(PartitionAssignorError):
        RANGE.assign(group(member("A", [T2])), Topics({T1: 3}))


@pytest.mark.parametrize("homogeneous", [True, False])
def test_first_assignment_two_members_two_topics_same_subscriptions(homogeneous):
    spec = group(member("A", [T1, T3]), member("B", [T1, T3]), homogeneous=homogeneous)
    assert run(spec, Topics({T1: 3, T3: 2})) == {
        "A": {T1: {0, 1}, T3: {0}},
        "B": {T1: {2}, T3: {1}},
    }


def test_first_assignment_three_members_three_topics_different_subscriptions():
    spec = group(member("A", [T1, T2]), member("B", [T3]), member("C", [T2, T3]))
    assert run(spec, Topics({T1: 3, T2: 3, T3: 2})) == {
        "A": {T1: {0, 1, 2}, T2: {0, 1}},
        "B": {T3: {0}},
        "C": {T2: {2}, T3: {1}},
    }


def test_first_assignment_num_members_greater_than_num_partitions():
    spec = group(*(member(m, [T1, T3]) for m in "ABC"))
    assert run(spec, Topics({T1: 3, T3: 2})) == {
        "A": {T1: {0}, T3: {0}},
        "B": {T1: {1}, T3: {1}},
        "C": {T1: {2}},
    }


def test_static_membership():
    topics = Topics({T1: 3})
    first = RANGE.assign(
        group(
            member("A", [T1], instance_id="instanceA"), member("B", [T1], instance_id="instanceB")
        ),
        topics,
    )
    # A rejoins under a new member id with the same instance id: nothing moves.
    again = RANGE.assign(
        group(
            member("B", [T1], instance_id="instanceB"), member("A1", [T1], instance_id="instanceA")
        ),
        topics,
    )
    assert again["A1"] == first["A"] and again["B"] == first["B"]


def test_mixed_static_membership():
    topics = Topics({T1: 5})
    first = RANGE.assign(
        group(
            member("A", [T1], instance_id="instanceA"),
            member("C", [T1], instance_id="instanceC"),
            member("B", [T1]),
        ),
        topics,
    )
    again = RANGE.assign(
        group(
            member("C", [T1], instance_id="instanceC"),
            member("B", [T1]),
            member("A1", [T1], instance_id="instanceA"),
        ),
        topics,
    )
    assert again["A1"] == first["A"] and again["B"] == first["B"] and again["C"] == first["C"]
    # Static members come first, by instance id; then the dynamic ones.
    assert first == {"A": {T1: {0, 1}}, "C": {T1: {2, 3}}, "B": {T1: {4}}}


def test_reassignment_num_members_greater_than_num_partitions_when_one_member_added():
    spec = group(
        member("A", [T1, T2], {T1: [0], T2: [0]}),
        member("B", [T1, T2], {T1: [1], T2: [1]}),
        member("C", [T1, T2]),
    )
    assert run(spec, Topics({T1: 2, T2: 2})) == {
        "A": {T1: {0}, T2: {0}},
        "B": {T1: {1}, T2: {1}},
        "C": {},
    }


def test_reassignment_when_one_partition_added_for_two_members_two_topics():
    spec = group(
        member("A", [T1, T2], {T1: [0, 1], T2: [0, 1]}),
        member("B", [T1, T2], {T1: [2], T2: [2]}),
    )
    assert run(spec, Topics({T1: 4, T2: 4})) == {
        "A": {T1: {0, 1}, T2: {0, 1}},
        "B": {T1: {2, 3}, T2: {2, 3}},
    }


def test_reassignment_when_one_member_added_after_initial_assignment():
    spec = group(
        member("A", [T1, T2], {T1: [0, 1], T2: [0, 1]}),
        member("B", [T1, T2], {T1: [2], T2: [2]}),
        member("C", [T1, T2]),
    )
    assert run(spec, Topics({T1: 3, T2: 3})) == {
        "A": {T1: {0}, T2: {0}},
        "B": {T1: {1}, T2: {1}},
        "C": {T1: {2}, T2: {2}},
    }


def test_reassignment_when_one_member_added_and_one_partition_added():
    spec = group(
        member("A", [T1, T2], {T1: [0, 1], T2: [0, 1]}),
        member("B", [T1, T2], {T1: [2], T2: [2]}),
        member("C", [T1]),
    )
    assert run(spec, Topics({T1: 4, T2: 3})) == {
        "A": {T1: {0, 1}, T2: {0, 1}},
        "B": {T1: {2}, T2: {2}},
        "C": {T1: {3}},
    }


def test_reassignment_when_one_member_removed():
    spec = group(member("B", [T1, T2], {T1: [2], T2: [2]}))
    assert run(spec, Topics({T1: 3, T2: 3})) == {"B": {T1: {0, 1, 2}, T2: {0, 1, 2}}}


def test_reassignment_when_multiple_subscriptions_removed():
    spec = group(
        member("A", [T1], {T1: [0, 1, 2], T2: [0]}),
        member("B", [T1, T2, T3], {T2: [1]}),
        member("C", [T2], {T2: [2], T3: [0, 1]}),
    )
    assert run(spec, Topics({T1: 3, T2: 3, T3: 2})) == {
        "A": {T1: {0, 1}},
        "B": {T1: {2}, T2: {0, 1}, T3: {0, 1}},
        "C": {T2: {2}},
    }


def test_java_string_order_of_member_ids():
    """Ids compare by UTF-16 code unit, as Java's ``String.compareTo``: U+1F600 is encoded with
    the surrogate 0xD83D, below U+FF21, so Java sorts it first although its code point is higher."""
    spec = group(member("\uff21", [T1]), member("\U0001f600", [T1]))
    assert normalized(RANGE.assign(spec, Topics({T1: 2}))) == {
        "\uff21": {T1: {1}},
        "\U0001f600": {T1: {0}},
    }
