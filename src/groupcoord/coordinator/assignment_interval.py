"""When a group may compute its next target assignment (KIP-1263's assignment interval,
`GroupMetadataManager.canComputeNextTargetAssignment`), shared by consumer and share groups.

Rate-limiting the target computation is how Kafka batches assignment work: joins and
subscription changes within one interval only bump the group epoch, and the first
heartbeat after the interval computes one target for all of them.
"""

from __future__ import annotations


def can_compute_next_target(assignment_timestamp_ms: int, interval_ms: int, now_ms: int) -> bool:
    """True when there is no previous target (or its time is unknown: timestamp 0), when the
    interval is 0 (the escape hatch for a wall clock that jumped back), or once the interval
    has passed since the last target was computed."""
    return (assignment_timestamp_ms == 0 or interval_ms == 0
            or now_ms >= assignment_timestamp_ms + interval_ms)
