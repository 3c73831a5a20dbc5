"""Partition logs in Kafka's log-dir layout (segments, indexes, recovery, retention).

The names below load on first use (PEP 562), so importing a light submodule such as
`storage.fileio` (the broker's configuration needs it) does not pull in the log, segment and
record-batch code before the broker has bound its listeners.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groupcoord.storage.config import (
        AppendInfo,
        AppendPreconditionFailed,
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
    from groupcoord.storage.memory_store import InMemoryPartitionStore
    from groupcoord.storage.partition_store import LogSnapshot, PartitionStore

_HOMES = {
    "AppendInfo": "config",
    "AppendPreconditionFailed": "config",
    "InvalidRecordError": "config",
    "KafkaStorageError": "config",
    "LogConfig": "config",
    "OffsetOutOfRangeError": "config",
    "RecordBatchTooLargeError": "config",
    "RecoveryReport": "config",
    "StorageError": "config",
    "PartitionLog": "log",
    "LogManager": "manager",
    "TopicInfo": "manager",
    "InMemoryPartitionStore": "memory_store",
    "LogSnapshot": "partition_store",
    "PartitionStore": "partition_store",
}

__all__ = [
    "AppendInfo",
    "AppendPreconditionFailed",
    "InMemoryPartitionStore",
    "InvalidRecordError",
    "KafkaStorageError",
    "LogConfig",
    "LogManager",
    "LogSnapshot",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "PartitionStore",
    "RecordBatchTooLargeError",
    "RecoveryReport",
    "StorageError",
    "TopicInfo",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
