"""Partition logs in Kafka's log-dir layout (segments, indexes, recovery, retention)."""

from groupcoord.storage.config import (
    AppendInfo,
    InvalidRecordError,
    KafkaStorageError,
    LogConfig,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecoveryReport,
    StorageError,
)
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.manager import LogManager, TopicInfo

__all__ = [
    "AppendInfo",
    "InvalidRecordError",
    "KafkaStorageError",
    "LogConfig",
    "LogManager",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "RecordBatchTooLargeError",
    "RecoveryReport",
    "StorageError",
    "TopicInfo",
]
