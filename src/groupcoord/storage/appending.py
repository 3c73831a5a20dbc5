"""What every partition store does to an append's bytes before it stores them.

Produce bytes are stored as the client sent them: each batch is framed and checked (length,
``max.message.bytes``, the control bit; magic, CRC and offset range unless the broker built
it), and only the fields outside the records are rewritten in a copy (base offset,
partition leader epoch, and for LogAppendTime the max timestamp and CRC). One definition for
the file log (``storage.log``) and the in-memory store (``storage.memory_store``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.logformat.batch import (
    LOG_APPEND_TIME,
    BatchHeader,
    batch_size_at,
    parse_header,
    set_base_offset,
    set_max_timestamp,
    set_partition_leader_epoch,
    validate,
)
from groupcoord.logformat.record import CorruptRecordError
from groupcoord.storage.config import (
    AppendInfo,
    InvalidRecordError,
    LogConfig,
    RecordBatchTooLargeError,
)


@dataclass(frozen=True)
class PreparedAppend:
    """An append's batches as they will be stored: offsets assigned, fields stamped."""

    buf: bytearray
    headers: list[BatchHeader]
    now_ms: int
    log_append_time: bool

    def info(self, log_start_offset: int) -> AppendInfo:
        """The ``AppendInfo`` of these batches once stored."""
        first, last = self.headers[0], self.headers[-1]
        max_ts = max(h.max_timestamp for h in self.headers)
        return AppendInfo(first.base_offset, last.last_offset,
                          self.now_ms if self.log_append_time else -1, max_ts,
                          log_start_offset, self.headers)


def prepare_append(data: bytes | bytearray | memoryview, config: LogConfig, log_end_offset: int,
                   now_ms: int, *, assign_offsets: bool, leader_epoch: int | None,
                   allow_control: bool, trusted: bool) -> PreparedAppend:
    """Validate ``data`` (whole batches) and stamp a copy for a log ending at
    ``log_end_offset``.

    With ``assign_offsets`` (produce) base offsets are rewritten from the log end; without
    it (internal writers, the cleaner) batches must already start at or after it.
    ``trusted`` is for batches the broker encoded itself (coordinator writes, never
    Produce): their framing and size are checked, not their CRC and record count.
    """
    buf = bytearray(data)
    headers = (_frame_all(buf, config, allow_control) if trusted
               else _validate_all(buf, config, allow_control))
    log_append = config.message_timestamp_type == LOG_APPEND_TIME
    next_offset = log_end_offset
    pos = 0
    for i, header in enumerate(headers):
        if assign_offsets:
            set_base_offset(buf, pos, next_offset)
        elif header.base_offset < next_offset:
            raise InvalidRecordError(
                f"batch offset {header.base_offset} below log end offset {next_offset}")
        if leader_epoch is not None:
            set_partition_leader_epoch(buf, pos, leader_epoch)
        if log_append:
            set_max_timestamp(buf, pos, LOG_APPEND_TIME, now_ms)
        headers[i] = header = parse_header(buf, pos)
        next_offset = header.last_offset + 1
        pos += header.size
    return PreparedAppend(buf, headers, now_ms, log_append)


def prepare_copy(data: bytes | bytearray | memoryview) -> PreparedAppend:
    """Batches stored elsewhere, to be stored again exactly as they are (a copy of another
    store's log): framed, nothing checked against this log's settings, nothing stamped."""
    buf = bytearray(data)
    headers = _split_batches(buf, lambda pos, _size: parse_header(buf, pos), max_bytes=None,
                             allow_control=True)
    return PreparedAppend(buf, headers, -1, log_append_time=False)


def _validate_all(buf: bytearray, config: LogConfig, allow_control: bool) -> list[BatchHeader]:
    def checked(pos: int, size: int) -> BatchHeader:
        return validate(memoryview(buf)[pos : pos + size], check_offsets=True)
    try:
        return _split_batches(buf, checked, max_bytes=config.max_message_bytes,
                              allow_control=allow_control)
    except CorruptRecordError as exc:
        raise InvalidRecordError(str(exc)) from exc


def _frame_all(buf: bytearray, config: LogConfig, allow_control: bool) -> list[BatchHeader]:
    """The headers of broker-built batches: sizes and the control bit, no CRC pass."""
    return _split_batches(buf, lambda pos, _size: parse_header(buf, pos),
                          max_bytes=config.max_message_bytes, allow_control=allow_control)


def _split_batches(buf: bytearray, read_header: Callable[[int, int], BatchHeader], *,
                   max_bytes: int | None, allow_control: bool) -> list[BatchHeader]:
    """The header of every batch in `buf`, read by `read_header(position, size)`, after the
    framing and size checks every append makes (`max_bytes` None: no size limit, for a
    copy of batches another store accepted)."""
    headers: list[BatchHeader] = []
    pos = 0
    while pos < len(buf):
        size = batch_size_at(buf, pos)
        if size is None or pos + size > len(buf):
            raise InvalidRecordError("partial record batch in append")
        if max_bytes is not None and size > max_bytes:
            raise RecordBatchTooLargeError(f"batch of {size} bytes exceeds limit")
        header = read_header(pos, size)
        if header.is_control and not allow_control:
            raise InvalidRecordError("control batches may not be produced")
        headers.append(header)
        pos += size
    if not headers:
        raise InvalidRecordError("append with no record batches")
    return headers
