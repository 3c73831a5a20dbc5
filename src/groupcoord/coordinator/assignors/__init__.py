"""Server-side assignors as pure functions: ``uniform`` (the default) and ``range`` for
KIP-848 consumer groups, ``simple`` for KIP-932 share groups.  See ``api`` for the interface
the group state machines call."""

from __future__ import annotations

from groupcoord.coordinator.assignors.api import (
    Assignor,
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    TopicDescriber,
)
from groupcoord.coordinator.assignors.range_assignor import RangeAssignor
from groupcoord.coordinator.assignors.simple import SimpleAssignor
from groupcoord.coordinator.assignors.uniform import UniformAssignor

ASSIGNORS: dict[str, Assignor] = {
    "uniform": UniformAssignor(),
    "range": RangeAssignor(),
    "simple": SimpleAssignor(),
}

__all__ = [
    "ASSIGNORS",
    "Assignor",
    "GroupSpec",
    "MemberSpec",
    "PartitionAssignorError",
    "RangeAssignor",
    "SimpleAssignor",
    "TopicDescriber",
    "UniformAssignor",
]
