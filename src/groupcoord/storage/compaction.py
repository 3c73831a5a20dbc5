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
- A cleaned segment is written to ``<base>.log.cleaned``, renamed to ``.log.swap`` and then
  over the ``.log``; recovery finishes or discards an interrupted swap.
- Transactions (Kafka's ``CleanedTransactionMetadata``): nothing at or past the first
  unstable offset (the oldest open transaction) is cleaned, and the data batches of aborted
  transactions (known from the ``.txnindex`` files) neither count as the latest value of a
  key nor survive cleaning; markers stay.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.logformat.batch import (
    LOG_APPEND_TIME,
    BatchHeader,
    Record,
    build_batch,
    decode_records,
    parse_header,
)
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.segment import LogSegment, iter_file_batches

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


def _build_offset_map(segments: list[LogSegment], key_fn: KeyFn,
                      aborted: Aborted | None = None) -> dict[bytes, int]:
    """key -> offset of its latest record across ``segments`` (the cleaner's OffsetMap)."""
    latest: dict[bytes, int] = {}
    for seg in segments:
        for _, view in iter_file_batches(seg.fd, 0, seg.size):
            header = parse_header(view)
            if header.is_control or (aborted and _is_aborted(header, aborted)):
                continue
            for rec in decode_records(view):
                key = key_fn(rec)
                if key is not None:
                    latest[key] = header.base_offset + rec.offset_delta
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


def _clean_segment(log: PartitionLog, index: int, key_fn: KeyFn, latest: dict[bytes, int],
                   horizon_ms: int, aborted: Aborted | None = None) -> int:
    """Rewrite segment ``index`` of ``log``; return the number of records removed."""
    seg = log.segments[index]
    cleaned_path = seg.log_path + ".cleaned"
    removed = 0
    with open(cleaned_path, "wb") as out:
        for _, view in iter_file_batches(seg.fd, 0, seg.size):
            batch, dropped = _filter_batch(view, key_fn, latest, horizon_ms, aborted)
            removed += dropped
            if batch is not None:
                out.write(batch)
        out.flush()
        os.fsync(out.fileno())
    if not removed:
        os.unlink(cleaned_path)
        return 0
    swap_path = seg.log_path + ".swap"
    os.replace(cleaned_path, swap_path)
    seg.close()
    os.replace(swap_path, seg.log_path)
    fresh = LogSegment(log.path, seg.base_offset, log.config.index_interval_bytes)
    fresh.recover(verify=False)
    fresh.offset_index.close()
    fresh.time_index.close()
    fresh.created_ms = seg.created_ms
    log.segments[index] = fresh
    return removed


def compact(log: PartitionLog, key_fn: KeyFn = record_key, now_ms: int | None = None,
            delete_retention_ms: int | None = None,
            first_unstable_offset: int | None = None) -> CompactionResult:
    """Clean every inactive segment of ``log`` wholly below ``first_unstable_offset``
    in place (see the module rules)."""
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    retention = log.config.delete_retention_ms if delete_retention_ms is None \
        else delete_retention_ms
    cleanable = log.segments[:-1]
    if first_unstable_offset is not None:
        segs = log.segments
        cleanable = [s for i, s in enumerate(cleanable)
                     if segs[i + 1].base_offset <= first_unstable_offset]
    result = CompactionResult(bytes_before=sum(s.size for s in cleanable))
    aborted = _aborted_ranges(log)
    latest = _build_offset_map(cleanable, key_fn, aborted)
    for index in range(len(cleanable)):
        removed = _clean_segment(log, index, key_fn, latest, now - retention, aborted)
        if removed:
            result.segments_cleaned += 1
            result.records_removed += removed
    result.bytes_after = sum(s.size for s in log.segments[:-1])
    return result
