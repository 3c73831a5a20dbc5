"""Builders for assignor tests: Kafka-style topic ids, members and validity checks."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping

from groupcoord.coordinator.assignors import GroupSpec, MemberSpec


def kafka_uuid(text: str) -> bytes:
    """``Uuid.fromString``: url-safe base64 of the 16 bytes, unpadded."""
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    assert len(raw) == 16
    return raw


# The topic ids of Kafka's assignor tests.
T1 = kafka_uuid("T1-A4s3VTwiI5CTbEp6POw")
T2 = kafka_uuid("T2-B4s3VTwiI5YHbPp6YUe")
T3 = kafka_uuid("T3-CU8fVTLCz5YMkLoDQsa")


class Topics:
    """A ``TopicDescriber`` over a dict of partition counts."""

    def __init__(self, counts: Mapping[bytes, int]) -> None:
        self.counts = dict(counts)

    def num_partitions(self, topic_id: bytes) -> int:
        return self.counts.get(topic_id, -1)


def member(
    member_id: str,
    topics: Iterable[bytes],
    assignment: Mapping[bytes, Iterable[int]] | None = None,
    instance_id: str | None = None,
    rack: str | None = None,
) -> MemberSpec:
    return MemberSpec(
        member_id=member_id,
        instance_id=instance_id,
        rack=rack,
        subscribed_topic_ids=frozenset(topics),
        assignment={t: frozenset(ps) for t, ps in (assignment or {}).items()},
    )


def group(*members: MemberSpec, homogeneous: bool | None = None) -> GroupSpec:
    """A group in the given member order; homogeneity is derived unless given."""
    if homogeneous is None:
        homogeneous = len({m.subscribed_topic_ids for m in members}) <= 1
    return GroupSpec(members={m.member_id: m for m in members}, homogeneous=homogeneous)


def normalized(result: Mapping[str, Mapping[bytes, Iterable[int]]]) -> dict:
    """Drop empty topics so results compare like Kafka's ``assertAssignment``."""
    return {m: {t: set(ps) for t, ps in a.items() if ps} for m, a in result.items()}


def sizes(result: Mapping[str, Mapping[bytes, Iterable[int]]]) -> dict[str, int]:
    return {m: sum(len(set(ps)) for ps in a.values()) for m, a in result.items()}


def check_valid(spec: GroupSpec, topics: Topics, result: Mapping, exclusive: bool = True) -> None:
    """Every member present; only subscribed, existing partitions; each at most once."""
    assert set(result) == set(spec.members)
    seen: set[tuple[bytes, int]] = set()
    for member_id, assignment in result.items():
        subscribed = spec.members[member_id].subscribed_topic_ids
        for topic_id, partitions in assignment.items():
            assert topic_id in subscribed, "partition of an unsubscribed topic"
            for p in partitions:
                assert 0 <= p < topics.counts[topic_id]
                if exclusive:
                    assert (topic_id, p) not in seen, f"{p} assigned twice"
                seen.add((topic_id, p))


def check_complete(spec: GroupSpec, topics: Topics, result: Mapping) -> None:
    """Every partition of every subscribed topic is assigned exactly once."""
    check_valid(spec, topics, result)
    subscribed = set().union(*(m.subscribed_topic_ids for m in spec.members.values()))
    expected = sum(topics.counts[t] for t in subscribed)
    assert sum(sizes(result).values()) == expected


def check_balanced_homogeneous(result: Mapping) -> None:
    counts = sizes(result).values()
    assert max(counts) - min(counts) <= 1
