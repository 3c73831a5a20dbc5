"""One `__consumer_offsets` partition's groups of every kind and its committed offsets:
the tables `GroupCoordinatorShard` runs its operations over, and what the per-kind
operations (`share.shard_ops`, `streams.shard_ops`, `share.state_ops`) look up across
kinds, since a group id names one group of one kind only.
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.classic.manager import ClassicGroups
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.consumer import conversion
from groupcoord.coordinator.consumer.manager import ConsumerGroups
from groupcoord.coordinator.ids import IdSource, SequentialIds
from groupcoord.coordinator.offsets.store import OffsetStore
from groupcoord.coordinator.records import offset_tombstone
from groupcoord.coordinator.share.manager import ShareGroups
from groupcoord.coordinator.streams.manager import StreamsGroups


class ShardGroups:
    """Classic, consumer, streams and share groups by id, and the committed offsets."""

    def __init__(self, config: GroupCoordinatorConfig | None = None,
                 ids: IdSource | None = None) -> None:
        self.config = config or GroupCoordinatorConfig()
        # Tests may omit the id source; the server always injects a random one.
        self.ids: IdSource = ids or SequentialIds()
        self.classic = ClassicGroups(self.config, self.ids)
        self.consumer = ConsumerGroups(self.config, self.ids, self.classic,
                                       conversion.MIGRATION)
        self.streams = StreamsGroups(self.config)
        self.offsets = OffsetStore()
        self.share = ShareGroups(
            session_timeout_ms=self.config.group_share_session_timeout_ms,
            heartbeat_interval_ms=self.config.group_share_heartbeat_interval_ms,
            max_size=self.config.group_share_max_size,
            assignment_interval_ms=self.config.group_share_assignment_interval_ms,
            initialize_retry_interval_ms=self.config.share_initialize_retry_interval_ms)

    def delete_offsets(self, group_id: str, records: list[Any]) -> None:
        """`OffsetMetadataManager.deleteAllOffsets`: committed offsets, then partitions
        that only have pending transactional offsets."""
        committed = self.offsets.group(group_id)
        for topic, parts in sorted(committed.items()):
            for partition in sorted(parts):
                records.append(offset_tombstone(group_id, topic, partition))
        for topic, partition in self.offsets.pending.partitions(group_id):
            if partition not in committed.get(topic, {}):
                records.append(offset_tombstone(group_id, topic, partition))
