"""The data directory: every partition log, their topic ids, configs and checkpoints.

Mirrors ``kafka.log.LogManager`` for a single log dir.

Rules kept here:
- A partition lives in ``<data_dir>/<topic>-<partition>``; its topic id is in that
  directory's ``partition.metadata``. The topic name is everything before the last ``-``.
- Deleting a topic first renames each partition directory to
  ``<topic>-<partition>.<uuid hex>-delete`` (so a crash never leaves a half-deleted live
  log) and then removes it; leftovers of that kind are removed on load.
- ``log-start-offset-checkpoint`` and ``recovery-point-offset-checkpoint`` are written on
  ``checkpoint``/``close`` so a restart keeps DeleteRecords effects and only re-checks the
  segments written after the last flush.
- Per-topic overrides (Kafka names such as ``retention.ms`` or snake_case) apply on top of
  the manager's default ``LogConfig``.
- ``.kafka_cleanshutdown`` (Kafka's marker) is written last by a clean ``close`` and removed
  by the next load: with it, no segment is CRC-scanned at start-up (Kafka's
  ``LogManager`` skips recovery the same way); without it, segments past the recovery
  point are. Internal topics are checked batch by batch when they are replayed
  (``PartitionLog.iter_batches``), so damage there never ends a replay early.
- A checkpoint that cannot be written (full disk) is logged and left as it was: an older
  recovery point only means more checking at the next start.
"""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass
from typing import Any

from groupcoord.storage.config import LogConfig, RecoveryReport, StorageError
from groupcoord.storage.documents import FileDocuments, MetadataDocuments
from groupcoord.storage.fileio import OS_FILE_IO, FileIO
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.metadata import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    read_checkpoint,
    write_checkpoint,
)

TopicPartition = tuple[str, int]
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

logger = logging.getLogger(__name__)


@dataclass
class TopicInfo:
    """A topic found on disk."""

    name: str
    topic_id: bytes | None
    partitions: int


def parse_partition_dir(name: str) -> TopicPartition | None:
    """``orders-3`` -> ("orders", 3); None for anything that is not a partition dir."""
    topic, dash, part = name.rpartition("-")
    if not dash or not topic or not part.isdigit() or "." in part:
        return None
    return topic, int(part)


class LogManager:
    """Owns ``data_dir`` and the ``PartitionLog`` of every partition in it."""

    def __init__(self, data_dir: str, default_config: LogConfig | None = None,
                 topic_configs: dict[str, dict[str, Any]] | None = None,
                 io: FileIO = OS_FILE_IO) -> None:
        self.data_dir = data_dir
        self.io = io
        self.default_config = default_config or LogConfig()
        self.topic_configs: dict[str, dict[str, Any]] = dict(topic_configs or {})
        self.logs: dict[TopicPartition, PartitionLog] = {}
        self.topic_ids: dict[str, bytes] = {}
        # The metadata documents and id counters beside the logs (topic, broker and group
        # configs, producer ids).
        self.documents: MetadataDocuments = FileDocuments(data_dir, io)
        io.makedirs(data_dir)

    def config_for(self, topic: str) -> LogConfig:
        return self.default_config.with_overrides(self.topic_configs.get(topic))

    def set_topic_config(self, topic: str, overrides: dict[str, Any]) -> None:
        """Replace a topic's overrides; open logs pick them up immediately."""
        self.topic_configs[topic] = dict(overrides)
        cfg = self.config_for(topic)
        for (name, _), log in self.logs.items():
            if name == topic:
                log.config = cfg

    def _dir(self, topic: str, partition: int) -> str:
        return os.path.join(self.data_dir, f"{topic}-{partition}")

    def load_all(self, now_ms: int | None = None) -> list[RecoveryReport]:
        """Open every partition directory, recovering each; return their reports."""
        marker = os.path.join(self.data_dir, CLEAN_SHUTDOWN_FILE)
        clean = self.io.exists(marker)
        starts = read_checkpoint(os.path.join(self.data_dir, LOG_START_OFFSET_CHECKPOINT),
                                 self.io)
        points = read_checkpoint(os.path.join(self.data_dir, RECOVERY_POINT_CHECKPOINT),
                                 self.io)
        reports = []
        for name in sorted(self.io.listdir(self.data_dir)):
            full = os.path.join(self.data_dir, name)
            if name.endswith("-delete") and self.io.isdir(full):
                self.io.rmtree(full)
                continue
            tp = parse_partition_dir(name)
            if tp is None or not self.io.isdir(full) or tp in self.logs:
                continue
            # No recovery point means no clean checkpoint: verify every segment.
            log = self._open(full, *tp, log_start_offset=starts.get(tp, 0),
                             recovery_point=points.get(tp, 0), now_ms=now_ms,
                             clean_shutdown=clean)
            self.logs[tp] = log
            if log.topic_id is not None:
                self.topic_ids[tp[0]] = log.topic_id
            reports.append(log.recovery_report)
        if clean:
            # From here on the logs are written again: a crash must not look clean.
            self.io.unlink(marker)
            self.io.fsync_dir(self.data_dir)
        return reports

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, topic_id: bytes | None = None,
                      config_overrides: dict[str, Any] | None = None) -> PartitionLog:
        """The partition's log, creating its directory and metadata if needed."""
        if config_overrides is not None:
            self.topic_configs[topic] = dict(config_overrides)
        log = self.logs.get((topic, partition))
        if log is not None:
            return log
        log = self._open(self._dir(topic, partition), topic, partition, topic_id=topic_id)
        if log.topic_id is not None:
            self.topic_ids[topic] = log.topic_id
        self.logs[(topic, partition)] = log
        return log

    def _open(self, path: str, topic: str, partition: int, *, topic_id: bytes | None = None,
              log_start_offset: int = 0, recovery_point: int | None = None,
              now_ms: int | None = None, clean_shutdown: bool = False) -> PartitionLog:
        """Open (recovering) the partition's log in its directory ``path``."""
        return PartitionLog.open(path, self.config_for(topic),
                                 log_start_offset=log_start_offset,
                                 recovery_point=recovery_point, now_ms=now_ms,
                                 topic_id=topic_id, io=self.io, clean_shutdown=clean_shutdown)

    def topics(self) -> dict[str, TopicInfo]:
        """Topics with open logs: id from partition.metadata, partition count."""
        out: dict[str, TopicInfo] = {}
        for topic, partition in self.logs:
            info = out.setdefault(topic, TopicInfo(topic, self.topic_ids.get(topic), 0))
            info.partitions = max(info.partitions, partition + 1)
        return out

    def delete_topic(self, topic: str) -> int:
        """Close and remove every partition of ``topic``; return how many were removed."""
        victims = [tp for tp in self.logs if tp[0] == topic]
        for tp in victims:
            log = self.logs.pop(tp)
            log.close()
            doomed = f"{log.path}.{uuid.uuid4().hex}-delete"
            self.io.replace(log.path, doomed)
            self.io.rmtree(doomed)
        self.topic_ids.pop(topic, None)
        self.topic_configs.pop(topic, None)
        return len(victims)

    def delete_expired(self, now_ms: int | None = None) -> int:
        """Apply retention to every log whose cleanup policy includes delete."""
        deleted = 0
        for log in self.logs.values():
            if "delete" in log.config.cleanup_policy:
                deleted += log.delete_expired(now_ms)
        return deleted

    def checkpoint(self) -> bool:
        """Persist log start offsets and recovery points (logged, not raised, on failure);
        True if both were written."""
        starts = {tp: log.log_start_offset for tp, log in self.logs.items()}
        points = {tp: log.recovery_point for tp, log in self.logs.items()}
        try:
            write_checkpoint(os.path.join(self.data_dir, LOG_START_OFFSET_CHECKPOINT), starts,
                             self.io)
            write_checkpoint(os.path.join(self.data_dir, RECOVERY_POINT_CHECKPOINT), points,
                             self.io)
        except OSError as exc:
            logger.error("%s: writing the offset checkpoints failed: %s", self.data_dir, exc)
            return False
        return True

    def flush_all(self) -> None:
        self._flush_each()
        self.checkpoint()

    def close(self) -> None:
        clean = self._flush_each()
        clean = self.checkpoint() and clean
        for log in self.logs.values():
            log.close()
        self.logs.clear()
        if clean:
            try:
                self.io.replace_file(os.path.join(self.data_dir, CLEAN_SHUTDOWN_FILE), b"")
                self.io.fsync_dir(self.data_dir)
            except OSError as exc:
                logger.error("%s: writing the clean-shutdown marker failed: %s",
                             self.data_dir, exc)

    def _flush_each(self) -> bool:
        """fsync every log; one that fails keeps its old recovery point and is logged.
        True if every log is on disk."""
        ok = True
        for log in self.logs.values():
            try:
                log.flush()
            except StorageError as exc:
                logger.error("%s", exc)
                ok = False
        return ok
