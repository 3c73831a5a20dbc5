"""Subscriptions as the coordinator computes them: a member's topic ids (names plus
resolved regex topics), the group's subscribed names after one member changes, and the
metadata hash over them (`ConsumerGroup.computeSubscribedTopicNames`,
`computeMetadataHash`). All work is O(subscribed topics), never O(members)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.topics import TopicsImage, group_hash, topic_hash


def member_topic_ids(m: ConsumerGroupMember, regexes: Mapping[str, frozenset[str]],
                     image: TopicsImage) -> frozenset[bytes]:
    names = set(m.subscribed_topic_names)
    if m.subscribed_topic_regex:
        # An unresolved regex subscribes to nothing yet.
        names |= regexes.get(m.subscribed_topic_regex, frozenset())
    ids = (image.topic_id(n) for n in names)
    return frozenset(i for i in ids if i is not None)


def subscribed_names(group: ConsumerGroup, regexes: Mapping[str, frozenset[str]],
                     removed: Iterable[ConsumerGroupMember],
                     added: Iterable[ConsumerGroupMember] = ()) -> set[str]:
    """The group's subscribed topic names once `removed` are replaced by `added`."""
    delta: dict[str, int] = {}
    rx_delta: dict[str, int] = {}
    changes = [(m, -1) for m in removed] + [(m, 1) for m in added]
    for m, sign in changes:
        for n in m.subscribed_topic_names:
            delta[n] = delta.get(n, 0) + sign
        if m.subscribed_topic_regex:
            rx_delta[m.subscribed_topic_regex] = rx_delta.get(m.subscribed_topic_regex, 0) + sign
    names = {n for n in set(group.name_counts) | set(delta)
             if group.name_counts.get(n, 0) + delta.get(n, 0) > 0}
    for rx in set(group.regex_counts) | set(rx_delta):
        if group.regex_counts.get(rx, 0) + rx_delta.get(rx, 0) > 0:
            names |= regexes.get(rx, frozenset())
    return names


def metadata_hash(names: set[str], image: TopicsImage) -> int:
    return group_hash({n: topic_hash(image, n) for n in names})
