"""Group id -> `__consumer_offsets` partition, exactly as Kafka's `partitionFor`.

Kafka: `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`, where `hashCode` is
Java's `String.hashCode` (31-multiplier over UTF-16 code units, int32 wrap-around) and
`Utils.abs(Integer.MIN_VALUE) == 0`.
"""

from __future__ import annotations

DEFAULT_NUM_PARTITIONS = 50


def java_string_hash(s: str) -> int:
    """Java `String.hashCode` as a signed int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def _kafka_abs(n: int) -> int:
    # Kafka's Utils.abs maps Integer.MIN_VALUE to 0 instead of overflowing.
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(group_id: str, num_partitions: int = DEFAULT_NUM_PARTITIONS) -> int:
    return _kafka_abs(java_string_hash(group_id)) % num_partitions
