"""The ``uniform`` assignor, the KIP-848 default (Kafka: ``UniformAssignor``).

Balance first, then stickiness.  Dispatches on the subscription type: one shared
subscription goes to the homogeneous builder, differing ones to the heterogeneous builder.
"""

from __future__ import annotations

from groupcoord.coordinator.assignors.api import GroupSpec, TopicDescriber
from groupcoord.coordinator.assignors.uniform_heterogeneous import assign_heterogeneous
from groupcoord.coordinator.assignors.uniform_homogeneous import assign_homogeneous


class UniformAssignor:
    """Balanced, sticky assignment for consumer groups."""

    name = "uniform"

    def assign(self, group: GroupSpec, topics: TopicDescriber) -> dict[str, dict[bytes, set[int]]]:
        if not group.members:
            return {}
        if group.homogeneous:
            return assign_homogeneous(group, topics)
        return assign_heterogeneous(group, topics)
