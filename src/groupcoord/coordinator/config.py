"""Group coordinator settings with Kafka's defaults (`GroupCoordinatorConfig`,
broker-level classic and offsets settings)."""

from __future__ import annotations

from dataclasses import dataclass

INT32_MAX = 2**31 - 1

# Not configurable in Kafka either (`CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`).
CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = INT32_MAX
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 104_857_600
    offsets_topic_compression_codec: int = 0
    offsets_load_buffer_size: int = 5_242_880
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4_096
    offsets_commit_timeout_ms: int = 5_000
    new_member_join_timeout_ms: int = CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
