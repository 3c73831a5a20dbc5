"""Lag of a group partition, as klag-exporter computes it (its `LagCalculator`), from the
committed offset and the partition's log on this broker:

- lag: high watermark - committed offset, at least 0 (one replica: the high watermark is
  the log end offset);
- lag in seconds: now - the timestamp of the first record at or past the committed offset
  (the next record the group will read), 0 when there is no lag; missing when no record
  could be read (the partition is unknown here, or the read budget of the scrape is spent);
- messages lost: log start offset - committed offset, when retention deleted records the
  group never read; the retention margin is committed - log start (negative on a loss);
  the lag-retention ratio is the lag's share of the retained range, in percent.

Reading a timestamp is one read of the batch holding the committed offset on the event
loop: at most `TimestampReader.budget` uncached reads per scrape, and each answer is kept
while the committed offset stays where it is, so a steady scrape reads only partitions
whose group moved.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.logformat.batch import LOG_APPEND_TIME, BatchHeader, iter_batches, records_payload
from groupcoord.logformat.record import CorruptRecordError, record_deltas_at
from groupcoord.server.metrics.groups import Member, TopicPartition
from groupcoord.storage import PartitionLog

# Bytes asked for per read; the first batch always comes whole, however large.
READ_BYTES = 64 * 1024
# Control batches (transaction markers) skipped looking for a record, at most.
MAX_READS = 4


@dataclass(frozen=True, slots=True)
class PartitionLag:
    group_id: str
    topic: str
    partition: int
    owner: Member | None
    committed: int
    earliest: int
    latest: int
    lag: int
    lag_seconds: float | None
    compacted: bool

    @property
    def data_loss(self) -> bool:
        return self.committed < self.earliest

    @property
    def messages_lost(self) -> int:
        return max(0, self.earliest - self.committed)

    @property
    def retention_margin(self) -> int:
        return self.committed - self.earliest

    @property
    def lag_retention_ratio(self) -> float:
        window = self.latest - self.earliest
        # klag's arithmetic, operation for operation, so the floats are the same.
        return (self.latest - self.committed) / window * 100.0 if window > 0 else 0.0


class TimestampReader:
    """Timestamps of the first record at or past an offset of a partition, kept while some
    exported group sits at that offset (groups at the same position share one read)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._cache: dict[tuple[str, int, int], int] = {}
        self._used: set[tuple[str, int, int]] = set()
        self._reads = 0
        # Reads done since the broker started (`groupcoord_metrics_timestamp_reads_total`).
        self.reads_total = 0

    def begin_scrape(self) -> None:
        self._used = set()
        self._reads = 0

    def end_scrape(self) -> None:
        """Forget positions no exported group was at in this scrape."""
        for key in [k for k in self._cache if k not in self._used]:
            del self._cache[key]

    def timestamp(self, tp: TopicPartition, plog: PartitionLog, offset: int) -> int | None:
        # Where the read starts: a log start moved past the offset changes the answer.
        key = (tp[0], tp[1], max(offset, plog.log_start_offset))
        self._used.add(key)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        if self._reads >= self.budget:
            return None
        self._reads += 1
        self.reads_total += 1
        found = first_timestamp(plog, key[2])
        if found is not None:  # none yet: asked again once a record is there
            self._cache[key] = found
        return found


def first_timestamp(plog: PartitionLog, offset: int) -> int | None:
    """The timestamp of the first data record with an offset >= `offset`, None if there is
    none yet (or the log cannot be read there). Below the log start (records lost to
    retention) it is the first record kept, where a consumer resumes."""
    wanted = position = max(offset, plog.log_start_offset)
    for _ in range(MAX_READS):
        if position >= plog.log_end_offset:
            return None
        try:
            data = plog.read(position, READ_BYTES)
        except (OSError, ValueError):  # OffsetOutOfRangeError after a concurrent deletion
            return None
        if not data:
            return None
        for header, batch in iter_batches(data):
            last = header.base_offset + header.last_offset_delta
            position = last + 1
            if last < wanted or header.is_control or header.records_count == 0:
                continue
            if header.timestamp_type == LOG_APPEND_TIME:
                return header.max_timestamp
            found = _record_timestamp(header, batch, wanted)
            if found is not None:
                return found
    return None


def _record_timestamp(header: BatchHeader, batch: memoryview, wanted: int) -> int | None:
    """The timestamp of the batch's first record at or past `wanted`: the records before
    it are skipped by their lengths, nothing of them decoded."""
    try:
        data = records_payload(batch, header)
        pos, base = 0, header.base_offset
        for _ in range(header.records_count):
            offset_delta, timestamp_delta, pos = record_deltas_at(data, pos)
            if base + offset_delta >= wanted:
                return header.base_timestamp + timestamp_delta
    except CorruptRecordError:
        return None
    return None


def partition_lag(group_id: str, tp: TopicPartition, committed: int, owner: Member | None,
                  plog: PartitionLog | None, reader: TimestampReader, now_ms: int
                  ) -> PartitionLag:
    if plog is None:
        # A topic this broker does not have (deleted): klag's default watermarks.
        return PartitionLag(group_id, tp[0], tp[1], owner, committed, 0, committed, 0, None,
                            False)
    earliest, latest = plog.log_start_offset, plog.log_end_offset
    lag = max(0, latest - committed)
    seconds: float | None = 0.0
    if lag > 0:
        ts = reader.timestamp(tp, plog, committed)
        seconds = None if ts is None else max(0.0, (now_ms - ts) / 1000.0)
        if seconds is None and committed < earliest:
            seconds = 0.0  # klag reports a data loss even without a timestamp
    return PartitionLag(group_id, tp[0], tp[1], owner, committed, earliest, latest, lag,
                        seconds, "compact" in plog.config.cleanup_policy)
