"""Per-log settings, results and errors shared by the storage modules.

Mirrors ``org.apache.kafka.storage.internals.log.LogConfig`` (topic-level ``segment.bytes``,
``segment.ms``, ``retention.ms``, ``retention.bytes``, ``index.interval.bytes``,
``segment.index.bytes``, ``message.timestamp.type``, ``cleanup.policy``,
``delete.retention.ms``, ``max.message.bytes``) with Kafka's defaults, plus
``LogAppendInfo`` and the outcome of recovery.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from groupcoord.logformat.batch import CREATE_TIME, BatchHeader

if TYPE_CHECKING:
    from groupcoord.storage.damage import DamagedRange

DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class LogConfig:
    """Topic-level log settings; -1 means unlimited for the retention limits."""

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * DAY_MS
    retention_ms: int = 7 * DAY_MS
    retention_bytes: int = -1
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10 * 1024 * 1024
    message_timestamp_type: int = CREATE_TIME
    cleanup_policy: str = "delete"
    delete_retention_ms: int = DAY_MS
    max_message_bytes: int = 1048588

    def with_overrides(self, overrides: dict[str, Any] | None) -> LogConfig:
        """A copy with Kafka-named (``segment.bytes``) or snake_case overrides applied."""
        if not overrides:
            return self
        known = {f.name for f in fields(self)}
        changes: dict[str, Any] = {}
        for name, value in overrides.items():
            key = name.replace(".", "_")
            if key not in known:
                raise ValueError(f"unknown log config {name!r}")
            if key == "message_timestamp_type" and isinstance(value, str):
                value = 1 if value == "LogAppendTime" else 0
            changes[key] = value
        return replace(self, **changes)


@dataclass
class AppendInfo:
    """Outcome of an append (``LogAppendInfo``); log_append_time_ms is -1 for CreateTime."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    max_timestamp: int
    log_start_offset: int = 0
    headers: list[BatchHeader] = field(default_factory=list)


@dataclass
class RecoveryReport:
    """What opening a partition log found and repaired."""

    path: str
    log_start_offset: int = 0
    log_end_offset: int = 0
    segments: int = 0
    segments_recovered: int = 0
    indexes_rebuilt: int = 0
    bytes_truncated: int = 0
    batches_dropped: int = 0
    damaged: list[DamagedRange] = field(default_factory=list)

    @property
    def last_offset(self) -> int:
        """Offset of the last record kept (-1 style: log_end_offset - 1)."""
        return self.log_end_offset - 1

    @property
    def clean(self) -> bool:
        return self.bytes_truncated == 0 and not self.damaged


class StorageError(Exception):
    """Base of the storage errors the server maps to Kafka error codes."""


class KafkaStorageError(StorageError):
    """The disk refused a write, fsync or truncate (KAFKA_STORAGE_ERROR); nothing of the
    failed append is left in the log."""


class StorageUnavailable(KafkaStorageError):
    """The shared store cannot be reached now (its connection lost, the server restarting):
    retriable, KAFKA_STORAGE_ERROR as a disk error is. Unlike a disk error, a write that
    failed this way may have committed before the connection dropped; the writer's next
    append settles it by naming the end offset it expected (``AppendPreconditionFailed``
    if the lost write landed)."""


class OffsetOutOfRangeError(StorageError):
    """Fetch offset outside [log_start_offset, log_end_offset] (OFFSET_OUT_OF_RANGE)."""


class CorruptBatchError(StorageError):
    """A read met stored bytes that are no valid batch where the requested offset lies
    (CORRUPT_MESSAGE, as Kafka answers for a ``CorruptRecordException`` on the read path)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class InvalidRecordError(StorageError):
    """A produced batch is malformed (CORRUPT_MESSAGE / INVALID_RECORD)."""


class RecordBatchTooLargeError(StorageError):
    """A produced batch exceeds max.message.bytes (MESSAGE_TOO_LARGE)."""


class AppendPreconditionFailed(StorageError):
    """An append named the log end offset it expected and the log ends elsewhere: another
    writer appended (or truncated) since this one last looked. Nothing was appended."""

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(f"expected log end offset {expected}, the log ends at {actual}")
        self.expected = expected
        self.actual = actual


class NotPartitionLeader(KafkaStorageError):
    """This node does not lead the partition of a shared store: another node holds its
    lease, or this one lost it. Nothing was written. Produce answers NOT_LEADER_OR_FOLLOWER;
    elsewhere it is answered as a storage error, as Kafka answers for a partition whose log
    dir went offline and whose leadership moved (the coordinators: NOT_COORDINATOR, so the
    client looks the coordinator up again)."""


class FencedLeaderEpoch(NotPartitionLeader):
    """A write by a leader whose epoch is no longer the partition's (FENCED_LEADER_EPOCH):
    another node has taken the leadership since, so this one may not append, truncate or
    renew its lease. Nothing was written."""

    def __init__(self, epoch: int, current_epoch: int) -> None:
        super().__init__(f"leader epoch {epoch} is fenced: the partition's epoch is "
                         f"{current_epoch}")
        self.epoch = epoch
        self.current_epoch = current_epoch


class LeaseHeld(StorageError):
    """Leadership of a partition was asked for while another node's lease is live."""

    def __init__(self, holder_node_id: int, epoch: int, lease_expiry_ms: int) -> None:
        super().__init__(f"node {holder_node_id} leads at epoch {epoch} until "
                         f"{lease_expiry_ms} ms")
        self.holder_node_id = holder_node_id
        self.epoch = epoch
        self.lease_expiry_ms = lease_expiry_ms
