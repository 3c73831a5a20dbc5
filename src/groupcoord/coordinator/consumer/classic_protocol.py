"""The embedded consumer protocol of classic members (`ConsumerProtocolSubscription`,
`ConsumerProtocolAssignment`, each an int16 version followed by the struct), read and
written for classic members inside a consumer group (Kafka's `ConsumerProtocol` use in
`GroupMetadataManager` and `ClassicGroup.fromConsumerGroup`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.generated.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
)
from groupcoord.wire.generated.consumer_protocol_assignment import (
    TopicPartition as AssignedTopic,
)
from groupcoord.wire.generated.consumer_protocol_subscription import (
    ConsumerProtocolSubscription,
)
from groupcoord.wire.messages import WireStruct

MAX_VERSION = 3


class MalformedProtocol(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    owned: dict[str, frozenset[int]]
    rack_id: str | None
    user_data: bytes | None


def _version(raw: bytes) -> int:
    if len(raw) < 2:
        raise MalformedProtocol("protocol metadata too short")
    return min(int.from_bytes(raw[:2], "big", signed=True), MAX_VERSION)


def _decode(message: type[WireStruct], raw: bytes) -> Any:
    """The struct after the int16 version (a version past ours reads as ours)."""
    try:
        version = _version(raw)
        decoded, _ = message.decode(bytes(raw), 2, max(version, 0))
    except Exception as exc:
        raise MalformedProtocol(str(exc)) from exc
    return decoded


def _by_topic(topic_partitions: Iterable[Any]) -> dict[str, frozenset[int]]:
    """Topic name -> partitions, a topic listed twice merged."""
    parts: dict[str, set[int]] = {}
    for tp in topic_partitions:
        parts.setdefault(tp.topic, set()).update(tp.partitions)
    return {t: frozenset(p) for t, p in parts.items()}


def parse_subscription(raw: bytes) -> Subscription:
    sub = _decode(ConsumerProtocolSubscription, raw)
    return Subscription(tuple(sub.topics), _by_topic(sub.owned_partitions or []),
                        sub.rack_id or None, sub.user_data)


def parse_assignment(raw: bytes) -> tuple[dict[str, frozenset[int]], bytes | None]:
    if not raw:
        return {}, None
    assignment = _decode(ConsumerProtocolAssignment, raw)
    return _by_topic(assignment.assigned_partitions), assignment.user_data


def encode_assignment(assignment: Mapping[bytes, object], image: TopicsImage,
                      version: int) -> bytes:
    """Topic ids -> names; topics missing from the image are left out."""
    version = max(0, min(version, MAX_VERSION))
    topics = []
    for topic_id, parts in sorted(assignment.items()):
        name = image.name_of(topic_id)
        if name is not None and parts:
            topics.append(AssignedTopic(topic=name, partitions=sorted(parts)))  # type: ignore[call-overload]
    body = ConsumerProtocolAssignment(assigned_partitions=topics, user_data=None)
    return version.to_bytes(2, "big") + body.encode(version)


def protocol_version(metadata: bytes) -> int:
    try:
        return max(0, _version(metadata))
    except MalformedProtocol:
        return 0
