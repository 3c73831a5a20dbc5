"""Server-side partition assignor interface (KIP-848 consumer groups, KIP-932 share groups).

Mirrors Kafka's ``org.apache.kafka.coordinator.group.api.assignor`` package
(``ConsumerGroupPartitionAssignor`` / ``GroupSpec`` / ``MemberSubscription`` /
``SubscribedTopicDescriber``), reduced to plain immutable values so that the
assignors are pure functions: the group state machine builds a ``GroupSpec``,
calls ``Assignor.assign`` and turns the result into a new target assignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as the assignor sees it (Kafka: ``MemberSubscriptionAndAssignmentImpl``)."""

    member_id: str
    instance_id: str | None
    rack: str | None
    subscribed_topic_ids: frozenset[bytes]  # 16-byte topic ids
    assignment: Mapping[bytes, frozenset[int]]  # the member's CURRENT TARGET assignment


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """The group as the assignor sees it (Kafka: ``GroupSpecImpl``)."""

    members: Mapping[str, MemberSpec]  # iteration order is the group's member order
    homogeneous: bool  # all members subscribe to the same topic ids


class TopicDescriber(Protocol):
    """Topic metadata lookup (Kafka: ``SubscribedTopicDescriber``)."""

    def num_partitions(self, topic_id: bytes) -> int:
        """Partition count of ``topic_id``; -1 when the topic does not exist."""
        ...


class PartitionAssignorError(Exception):
    """Raised when an assignment cannot be computed (Kafka: ``PartitionAssignorException``)."""


class Assignor(Protocol):
    """A server-side assignor (Kafka: ``ConsumerGroupPartitionAssignor``)."""

    name: str

    def assign(self, group: GroupSpec, topics: TopicDescriber) -> dict[str, dict[bytes, set[int]]]:
        """Return member_id -> topic_id -> partitions; every member appears (possibly empty)."""
        ...
