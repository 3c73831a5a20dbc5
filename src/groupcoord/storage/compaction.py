"""Log compaction for compacted internal topics such as ``__consumer_offsets``.

Mirrors, in simplified form, ``kafka.log.LogCleaner`` / ``Cleaner.cleanSegments`` and
``MemoryRecords.filterTo``.

Rules kept here:
- Only inactive segments are cleaned; the active segment is neither rewritten nor used to
  decide what is obsolete (Kafka's "first uncleanable offset" is the active segment base).
- A record survives if it is the latest record for its key among the cleanable segments.
  Records for which ``key_fn`` returns None (no key) are kept.
- A tombstone (null value) that is the latest for its key is dropped once its timestamp is
  at least ``delete_retention_ms`` old; until then it is kept so consumers see the delete.
  (Kafka measures this from when the segment was cleaned, via the delete horizon of
  KIP-534; the record timestamp is the simplification used here.)
- Offsets never change: a filtered batch keeps its base offset and its last offset delta
  (as ``filterTo`` does for magic 2, so producer state survives), its producer fields,
  timestamps and compression codec; its CRC is recomputed. A batch with nothing removed is
  copied byte for byte. A batch left with no records is dropped. Control batches are kept.
- Cleaning is three steps so the expensive one can run in another process (the broker's
  cleaner, ``server.log_cleaner``) while the log keeps serving: ``plan_cleaning`` (on the
  log's thread: which closed segments, their sizes, the aborted transactions, the horizon),
  ``run_clean_job`` (files only: reads the planned segments by path and writes each cleaned
  segment with its indexes under ``<partition>/cleaner-tmp/``) and ``apply_cleaned`` (on the
  log's thread: swaps each result in, unless retention or truncation changed that segment
  meanwhile). ``compact`` runs the three in a row.
- A swap renames the cleaned ``.log`` to ``<base>.log.swap`` first (the commit point),
  moves its index files in, renames the old ``.log`` to ``.log.deleted`` (removed later, off
  the log's thread, as Kafka deletes segments asynchronously) and the swap to ``.log``;
  recovery finishes an interrupted swap and rebuilds its indexes, and removes a stale
  ``cleaner-tmp`` and ``.deleted`` files.
- Transactions (Kafka's ``CleanedTransactionMetadata``): nothing at or past the first
  unstable offset (the oldest open transaction) is cleaned, and the data batches of aborted
  transactions (known from the ``.txnindex`` files) neither count as the latest value of a
  key nor survive cleaning; markers stay.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from groupcoord.logformat.batch import (
    LOG_APPEND_TIME,
    BatchHeader,
    build_batch,
    decode_records,
    parse_header,
)
from groupcoord.logformat.record import Record
from groupcoord.storage.fileio import OS_FILE_IO, FileIO
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.segment import LogSegment, iter_file_batches, segment_name

CLEANER_TMP = "cleaner-tmp"

KeyFn = Callable[[Record], bytes | None]


def record_key(record: Record) -> bytes | None:
    """Default key function: the record key itself."""
    return record.key


@dataclass
class CompactionResult:
    segments_cleaned: int = 0
    records_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    # The replaced segment files, renamed ``.deleted``: for the caller to remove (Kafka's
    # asynchronous segment deletion). Freeing a 100 MB file's blocks takes tens of ms, which
    # is not the swap's business; a crash before removal leaves them to recovery.
    replaced_files: list[str] = field(default_factory=list)


def _record_timestamp(header: BatchHeader, record: Record) -> int:
    if header.timestamp_type == LOG_APPEND_TIME:
        return header.max_timestamp
    return header.base_timestamp + record.timestamp_delta


Aborted = dict[int, list[tuple[int, int]]]


def _aborted_ranges(log: PartitionLog) -> Aborted:
    """producer id -> [(first offset, marker offset)] of its aborted transactions."""
    ranges: Aborted = {}
    for seg in log.segments:
        for txn in seg.txn_index.entries:
            ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    return ranges


def _is_aborted(header: BatchHeader, aborted: Aborted) -> bool:
    if not header.is_transactional or header.is_control:
        return False
    return any(first <= header.base_offset < last
               for first, last in aborted.get(header.producer_id, ()))


def _build_offset_map(segments: list[tuple[int, str, int]], key_fn: KeyFn,
                      aborted: Aborted | None = None, io: FileIO = OS_FILE_IO
                      ) -> dict[bytes, int]:
    """key -> offset of its latest record across ``(base, path, size)`` segments (the
    cleaner's OffsetMap)."""
    latest: dict[bytes, int] = {}
    for _, path, size in segments:
        fd = io.open(path, os.O_RDONLY)
        try:
            for _, view in iter_file_batches(io, fd, 0, size):
                header = parse_header(view)
                if header.is_control or (aborted and _is_aborted(header, aborted)):
                    continue
                for rec in decode_records(view):
                    key = key_fn(rec)
                    if key is not None:
                        latest[key] = header.base_offset + rec.offset_delta
        finally:
            io.close(fd)
    return latest


def _keep(header: BatchHeader, rec: Record, key_fn: KeyFn, latest: dict[bytes, int],
          horizon_ms: int) -> bool:
    key = key_fn(rec)
    if key is None:
        return True
    if latest.get(key) != header.base_offset + rec.offset_delta:
        return False
    return rec.value is not None or _record_timestamp(header, rec) > horizon_ms


def _filter_batch(view: memoryview, key_fn: KeyFn, latest: dict[bytes, int],
                  horizon_ms: int, aborted: Aborted | None = None
                  ) -> tuple[bytes | memoryview | None, int]:
    """The batch to write in place of ``view`` (None to drop it) and records removed."""
    header = parse_header(view)
    if header.is_control:
        return view, 0
    records = decode_records(view)
    if aborted and _is_aborted(header, aborted):
        return None, len(records)
    kept = [r for r in records if _keep(header, r, key_fn, latest, horizon_ms)]
    removed = len(records) - len(kept)
    if not removed:
        return view, 0
    if not kept:
        return None, removed
    rebuilt = build_batch(
        kept, base_offset=header.base_offset, base_timestamp=header.base_timestamp,
        compression=header.compression, producer_id=header.producer_id,
        producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
        transactional=header.is_transactional, timestamp_type=header.timestamp_type,
        partition_leader_epoch=header.partition_leader_epoch,
        max_timestamp=header.max_timestamp, last_offset_delta=header.last_offset_delta,
    )
    return rebuilt, removed


@dataclass(frozen=True)
class CleanJob:
    """What to clean, fixed on the log's thread: ``(base offset, path, size)`` of each
    closed segment, the aborted transactions, the tombstone horizon and the index interval."""

    directory: str
    segments: list[tuple[int, str, int]]
    aborted: Aborted
    horizon_ms: int
    index_interval_bytes: int
    key_fn: KeyFn = record_key


@dataclass
class CleanOutcome:
    """Per cleaned segment: base offset -> (records removed, size it was cleaned from)."""

    cleaned: dict[int, tuple[int, int]] = field(default_factory=dict)


def plan_cleaning(log: PartitionLog, now_ms: int | None = None,
                  delete_retention_ms: int | None = None,
                  first_unstable_offset: int | None = None,
                  key_fn: KeyFn = record_key) -> CleanJob:
    """The closed segments wholly below ``first_unstable_offset`` and what cleaning needs."""
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    retention = log.config.delete_retention_ms if delete_retention_ms is None \
        else delete_retention_ms
    segs = log.segments
    cleanable = [s for i, s in enumerate(segs[:-1])
                 if first_unstable_offset is None or segs[i + 1].base_offset <= first_unstable_offset]
    return CleanJob(log.path, [(s.base_offset, s.log_path, s.size) for s in cleanable],
                    _aborted_ranges(log), now - retention, log.config.index_interval_bytes, key_fn)


def run_clean_job(job: CleanJob, io: FileIO = OS_FILE_IO) -> CleanOutcome:
    """Write each planned segment that loses records, with its indexes, to the cleaner's
    temporary directory. Touches nothing the log uses; safe in another process (on the
    operating system's files)."""
    tmp = os.path.join(job.directory, CLEANER_TMP)
    io.rmtree(tmp)
    io.makedirs(tmp)
    latest = _build_offset_map(job.segments, job.key_fn, job.aborted, io)
    outcome = CleanOutcome()
    for base, path, size in job.segments:
        removed = _write_cleaned(tmp, base, path, size, job, latest, io)
        if removed:
            outcome.cleaned[base] = (removed, size)
    return outcome


def _write_cleaned(tmp: str, base: int, path: str, size: int, job: CleanJob,
                   latest: dict[bytes, int], io: FileIO) -> int:
    removed = 0
    out_path = os.path.join(tmp, segment_name(base) + ".log")
    fd = io.open(path, os.O_RDONLY)
    try:
        out = io.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            for _, view in iter_file_batches(io, fd, 0, size):
                batch, dropped = _filter_batch(view, job.key_fn, latest, job.horizon_ms,
                                               job.aborted)
                removed += dropped
                if batch is not None:
                    io.write_all(out, batch)
            io.fsync(out)
        finally:
            io.close(out)
    finally:
        io.close(fd)
    if not removed:
        io.unlink(out_path)
        return 0
    cleaned = LogSegment(tmp, base, job.index_interval_bytes, io)
    cleaned.recover(verify=False)  # writes its .index and .timeindex
    cleaned.close()
    return removed


def apply_cleaned(log: PartitionLog, job: CleanJob, outcome: CleanOutcome) -> CompactionResult:
    """Swap every cleaned segment into ``log`` whose segment is still there, unchanged."""
    tmp = os.path.join(job.directory, CLEANER_TMP)
    result = CompactionResult(bytes_before=sum(size for _, _, size in job.segments))
    for base, (removed, size) in outcome.cleaned.items():
        index = next((i for i, s in enumerate(log.segments[:-1]) if s.base_offset == base),
                     None)
        if index is None or log.segments[index].size != size:
            continue  # deleted or truncated while it was being cleaned
        log.segments[index] = _swap_in(log, log.segments[index], tmp, result.replaced_files)
        result.segments_cleaned += 1
        result.records_removed += removed
    log.io.rmtree(tmp)
    log.io.fsync_dir(log.path)
    sizes = {s.base_offset: s.size for s in log.segments[:-1]}
    result.bytes_after = sum(sizes.get(base, 0) for base, _, _ in job.segments)
    return result


def _swap_in(log: PartitionLog, seg: LogSegment, tmp: str, replaced: list[str]) -> LogSegment:
    stem = segment_name(seg.base_offset)
    swap_path = seg.log_path + ".swap"
    log.io.replace(os.path.join(tmp, stem + ".log"), swap_path)
    for index_path in (seg.offset_index.path, seg.time_index.path):
        log.io.replace(os.path.join(tmp, os.path.basename(index_path)), index_path)
    seg.close()
    # Renamed aside rather than replaced: a rename over the old file would free its blocks here.
    log.io.replace(seg.log_path, seg.log_path + ".deleted")
    replaced.append(seg.log_path + ".deleted")
    log.io.replace(swap_path, seg.log_path)
    fresh = LogSegment(log.path, seg.base_offset, log.config.index_interval_bytes, log.io)
    if not fresh.load_indexes():
        fresh.recover(verify=False)
    fresh.offset_index.close()
    fresh.time_index.close()
    fresh.next_offset = seg.next_offset
    fresh.created_ms = seg.created_ms
    return fresh


def compact(log: PartitionLog, key_fn: KeyFn = record_key, now_ms: int | None = None,
            delete_retention_ms: int | None = None,
            first_unstable_offset: int | None = None) -> CompactionResult:
    """Clean every inactive segment of ``log`` wholly below ``first_unstable_offset``
    in place, in this thread (see the module rules)."""
    job = plan_cleaning(log, now_ms, delete_retention_ms, first_unstable_offset, key_fn)
    result = apply_cleaned(log, job, run_clean_job(job, log.io))
    remove_replaced(log.io, result.replaced_files)
    return result


def remove_replaced(io: FileIO, paths: list[str]) -> None:
    """Remove the segment files a swap set aside (``CompactionResult.replaced_files``)."""
    for path in paths:
        io.unlink_quietly(path)
