"""Counts of what the coordinator did that no group event records: Kafka's
`offset-commit-count` and `offset-deletion-count` sensors (KIP-1301).

One `CoordinatorStats` is shared by every shard of a runtime, so the counts keep growing
across a shard's unload and reload, as Kafka's broker-wide sensors do.
"""

from __future__ import annotations


class CoordinatorStats:
    __slots__ = ("offset_commits", "offset_deletions")

    def __init__(self) -> None:
        # Offsets written by OffsetCommit and TxnOffsetCommit (one per partition).
        self.offset_commits = 0
        # Offsets removed by OffsetDelete (one per partition).
        self.offset_deletions = 0
