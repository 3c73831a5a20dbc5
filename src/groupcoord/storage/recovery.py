"""Loading a partition directory on open: find segments, check them, repair the tail.

Mirrors ``org.apache.kafka.storage.internals.log.LogLoader``.

Rules kept here:
- Leftovers of interrupted operations are resolved first: the cleaner's ``cleaner-tmp``
  directory and ``*.cleaned`` and ``*.deleted`` files are removed and ``*.swap`` files replace the segment they were written for, as the
  log cleaner's crash recovery does.
- Segments at or past the recovery point (by default: the last one) are re-read in full and
  every batch's CRC is checked. Damage followed by valid batches is cut out and set aside
  (``storage.damage``) and reported at ERROR with the offsets and bytes it covered; every
  valid batch after it is kept, in this segment and in the later ones (offsets may then
  have a gap, as after compaction). Invalid bytes at the end of the last segment are a torn
  write and are truncated with a WARNING, as Kafka does; at the end of a closed segment
  they are damage (set aside, ERROR).
- Segments before the recovery point keep their index files unless those are missing or
  inconsistent, in which case they are rebuilt by a scan.
- After a clean shutdown (``.kafka_cleanshutdown``) no segment is scanned: the last one's end
  is found from its offset index and a short header walk, as Kafka trusts a cleanly closed
  log; a walk that does not end exactly at the file's end falls back to a full recovery.
"""

from __future__ import annotations

import logging
import os

from groupcoord.storage.config import LogConfig, RecoveryReport
from groupcoord.storage.damage import DamagedRange
from groupcoord.storage.fileio import OS_FILE_IO, FileIO
from groupcoord.storage.segment import LogSegment, SegmentRecovery

_LEFTOVER_SUFFIXES = (".cleaned", ".deleted", ".tmp")

logger = logging.getLogger(__name__)


def _resolve_leftovers(path: str, io: FileIO) -> None:
    io.rmtree(os.path.join(path, "cleaner-tmp"))
    for name in io.listdir(path):
        full = os.path.join(path, name)
        if name.endswith(_LEFTOVER_SUFFIXES):
            io.unlink(full)
        elif name.endswith(".log.swap"):
            # The cleaner finished writing this segment; its old indexes describe the
            # replaced file, so drop them and let the load rebuild them.
            target = full[: -len(".swap")]
            io.replace(full, target)
            for ext in (".index", ".timeindex"):
                stale = target[: -len(".log")] + ext
                if io.exists(stale):
                    io.unlink(stale)


def segment_bases(path: str, io: FileIO = OS_FILE_IO) -> list[int]:
    """Base offsets of the ``.log`` files in ``path``, ascending."""
    bases = []
    for name in io.listdir(path):
        stem, dot, ext = name.partition(".")
        if dot and ext == "log" and stem.isdigit():
            bases.append(int(stem))
    return sorted(bases)


def load_segments(path: str, cfg: LogConfig, log_start_offset: int,
                  recovery_point: int | None, now_ms: int, io: FileIO = OS_FILE_IO,
                  clean_shutdown: bool = False) -> tuple[list[LogSegment], RecoveryReport]:
    """Open every segment of ``path``, recovering as described in the module docstring."""
    _resolve_leftovers(path, io)
    report = RecoveryReport(path)
    bases = segment_bases(path, io)
    if not bases:
        seg = LogSegment(path, log_start_offset, cfg.index_interval_bytes, io)
        seg.next_offset, seg.created_ms = log_start_offset, now_ms
        seg.offset_index.rewrite()
        seg.time_index.rewrite()
        report.segments = 1
        return [seg], report
    segments = [LogSegment(path, b, cfg.index_interval_bytes, io) for b in bases]
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        upper = segments[i + 1].base_offset if not last else None
        must_check = not clean_shutdown and (
            last or (recovery_point is not None and upper is not None and upper > recovery_point))
        if must_check:
            result = seg.recover(verify=True, save_tail=not last)
            report_segment_repair(report, seg, result)
        elif not seg.load_indexes() or (last and not seg.find_end()):
            report_segment_repair(report, seg, seg.recover(verify=True, save_tail=not last))
            report.indexes_rebuilt += 1
        else:
            seg.next_offset = upper if upper is not None else seg.next_offset
        if seg.first_batch_timestamp is not None and seg.first_batch_timestamp >= 0:
            seg.created_ms = min(seg.created_ms, seg.first_batch_timestamp)
    for seg in segments[:-1]:
        seg.offset_index.close()
        seg.time_index.close()
    report.segments = len(segments)
    return segments, report


def report_segment_repair(report: RecoveryReport, seg: LogSegment,
                          result: SegmentRecovery) -> None:
    """Add one segment's repair to the report and tell the operator about it."""
    report.segments_recovered += 1
    report.damaged.extend(result.damaged)
    for damage in result.damaged:
        _log_damage(damage)
    torn = result.truncated_bytes - sum(d.length for d in result.damaged
                                        if d.position == result.valid_bytes)
    report.bytes_truncated += result.truncated_bytes
    report.batches_dropped += result.batches_dropped
    if torn > 0:
        # Like Kafka's LogLoader: a repair is an operator-visible event.
        logger.warning(
            "%s: truncated %d bytes (%d batches) of a torn tail at position %d; next offset "
            "%d", seg.log_path, result.truncated_bytes, result.batches_dropped,
            result.valid_bytes, seg.next_offset)


def _log_damage(damage: DamagedRange) -> None:
    if damage.resume_offset > damage.first_offset:
        lost = f"offsets {damage.first_offset}..{damage.resume_offset - 1} unreadable"
    else:
        lost = f"no offsets between {damage.first_offset} and the next valid batch"
    logger.error(
        "%s: %d damaged bytes at position %d skipped (%s); every valid batch after them "
        "kept; the bytes were %s", damage.segment, damage.length, damage.position, lost,
        f"moved to {damage.saved_to}" if damage.saved_to else "not saved")
