"""Bytes of a coordinator shard's partition: records -> batch, log -> replay.

Mirrors Kafka's `CoordinatorRecordSerde` + `CoordinatorLoaderImpl`: a record's key is the
int16 record type followed by the key fields, its value the int16 version followed by
the value fields, a null value a tombstone. Records of one operation are appended as one
uncompressed batch; a transactional operation (TxnOffsetCommit) writes a transactional
batch carrying the producer id and epoch, and a transaction ends with a control batch
holding one COMMIT/ABORT `EndTxnMarker`. Loading decodes every batch in order and hands
each record to `shard.replay` with its log offset and its batch's producer, and each
marker to `shard.replay_end_transaction_marker`; a transaction without its marker at the
end of the log stays pending. Unknown record types are skipped, as Kafka's loader does.

`ProducerEpochs` is the log layer's producer check (Kafka's `ProducerAppendInfo`) for
what the coordinator writes: an older producer epoch is INVALID_PRODUCER_EPOCH and a
marker from an older transaction coordinator epoch TRANSACTION_COORDINATOR_FENCED.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.storage.partition_store import PartitionStore

log = logging.getLogger("groupcoord.coordinator")

NO_PRODUCER_ID = -1
# The EndTxnMarker value: int16 version, then the generated EndTxnMarker fields.
_MARKER_VALUE_VERSION = struct.Struct(">h")


def encode_records_batch(records: list[Any], now_ms: int, producer_id: int = NO_PRODUCER_ID,
                         producer_epoch: int = -1) -> bytes:
    """One uncompressed v2 batch holding `records` (CoordinatorRecord) at time `now_ms`;
    transactional when a producer id is given (base sequence 0, as Kafka's runtime)."""
    from groupcoord.logformat.batch import build_batch

    rows = [(rec.key_bytes(), rec.value_bytes(), (), now_ms) for rec in records]
    if producer_id == NO_PRODUCER_ID:
        return build_batch(rows)
    return build_batch(rows, producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=0, transactional=True)


class WriteRefused(Exception):
    """An operation's records cannot be written (too large, or not encodable): that
    operation fails, nothing is appended and the shard keeps serving."""


def refuse_if_too_large(size: int, limit: int, topic: str, partition: int) -> None:
    """Kafka's `RecordTooLargeException` of a batch over `max.message.bytes`."""
    if size > limit:
        raise WriteRefused(
            f"Message batch size is {size} bytes in append to partition "
            f"{topic}-{partition} which exceeds the maximum configured "
            f"size of {limit}.")


def encode_checked(records: list[Any], now_ms: int, pid: int, epoch: int, limit: int,
                   topic: str, partition: int) -> bytes:
    """An operation's own batch (`encode_records_batch`); WriteRefused when the log would
    refuse it: a value its record version cannot hold, or a batch over `limit`."""
    try:
        batch = encode_records_batch(records, now_ms, pid, epoch)
    except ValueError as exc:
        raise WriteRefused(str(exc)) from exc
    refuse_if_too_large(len(batch), limit, topic, partition)
    return batch


def build_checked(rows: list[Any]) -> bytes:
    """`build_batch` of staged rows, WriteRefused for one it cannot encode."""
    from groupcoord.logformat.batch import build_batch

    try:
        return build_batch(rows)
    except ValueError as exc:
        raise WriteRefused(str(exc)) from exc


def encode_end_txn_marker(producer_id: int, producer_epoch: int, coordinator_epoch: int,
                          commit: bool, now_ms: int) -> bytes:
    """A control batch (control + transactional bits) with one EndTxnMarker record."""
    from groupcoord.logformat.batch import CONTROL_ABORT, CONTROL_COMMIT, build_end_txn_marker

    return build_end_txn_marker(CONTROL_COMMIT if commit else CONTROL_ABORT, producer_id,
                                producer_epoch, now_ms, coordinator_epoch)


def decode_end_txn_marker(record: Any) -> tuple[bool, int] | None:
    """(commit?, coordinator epoch) of a control record; None for other control types."""
    from groupcoord.logformat.batch import CONTROL_ABORT, CONTROL_COMMIT, control_record_type
    from groupcoord.wire.generated.end_txn_marker import EndTxnMarker

    kind = control_record_type(record)
    if kind not in (CONTROL_ABORT, CONTROL_COMMIT):
        return None
    marker, _ = EndTxnMarker.decode(record.value, _MARKER_VALUE_VERSION.size, 0)
    return kind == CONTROL_COMMIT, marker.coordinator_epoch


class ProducerEpochs:
    """Per producer id: the latest epoch and the coordinator epoch of its last marker."""

    def __init__(self) -> None:
        self.entries: dict[int, tuple[int, int]] = {}

    def check(self, producer_id: int, epoch: int, coordinator_epoch: int | None = None) -> int:
        current_epoch, current_coordinator = self.entries.get(producer_id, (-1, -1))
        if epoch < current_epoch:
            return int(ErrorCode.INVALID_PRODUCER_EPOCH)
        if coordinator_epoch is not None and coordinator_epoch < current_coordinator:
            return int(ErrorCode.TRANSACTION_COORDINATOR_FENCED)
        return 0

    def observe(self, producer_id: int, epoch: int, coordinator_epoch: int | None = None) -> None:
        _, current_coordinator = self.entries.get(producer_id, (-1, -1))
        if coordinator_epoch is not None:
            current_coordinator = coordinator_epoch
        self.entries[producer_id] = (epoch, current_coordinator)


def replay_log(plog: PartitionStore | None, shard: Any,
               producers: ProducerEpochs | None = None) -> int:
    """Replay every record of the partition into `shard`; return how many were applied."""
    count = 0
    for count in replay_log_in_steps(plog, shard, producers):
        pass
    return count


def replay_log_in_steps(plog: PartitionStore | None, shard: Any,
                        producers: ProducerEpochs | None = None, step_batches: int = 256
                        ) -> Iterator[int]:
    """`replay_log` that yields the running record count every `step_batches` batches (and
    once at the end), so a loader can give the event loop back between steps."""
    if plog is None:
        yield 0
        return
    count = 0
    for batches, view in enumerate(plog.iter_batches(), 1):
        count += replay_batch(view, shard, producers)
        if batches % step_batches == 0:
            yield count
    yield count


def replay_batch(view: Any, shard: Any, producers: ProducerEpochs | None = None) -> int:
    """Replay one whole batch (records or transaction markers); the records applied."""
    from groupcoord.logformat.batch import decode_records, parse_header

    header = parse_header(view)
    pid = header.producer_id if header.is_transactional else NO_PRODUCER_ID
    if header.is_control:
        return _replay_markers(view, header, shard, producers) if pid != NO_PRODUCER_ID else 0
    if producers is not None and pid != NO_PRODUCER_ID:
        producers.observe(pid, header.producer_epoch)
    count = 0
    for rec in decode_records(view):
        count += _replay_record(shard, rec, header.base_offset + rec.offset_delta, pid,
                                header.producer_epoch)
    return count


def _replay_record(shard: Any, rec: Any, offset: int, pid: int, epoch: int) -> int:
    if rec.key is None:
        return 0
    try:
        record = shard.decode(rec.key, rec.value)
    except ValueError:
        # Unknown record types (a newer writer) and undecodable keys are skipped.
        return 0
    shard.replay(record, offset, pid, epoch)
    return 1


def _replay_markers(view: Any, header: Any, shard: Any, producers: ProducerEpochs | None
                    ) -> int:
    from groupcoord.logformat.batch import decode_records

    count = 0
    for rec in decode_records(view):
        try:
            marker = decode_end_txn_marker(rec)
        except ValueError:
            log.warning("skipping an unreadable control record at offset %d",
                        header.base_offset + rec.offset_delta)
            continue
        if marker is None:
            continue
        commit, coordinator_epoch = marker
        if producers is not None:
            producers.observe(header.producer_id, header.producer_epoch, coordinator_epoch)
        shard.replay_end_transaction_marker(header.producer_id, header.producer_epoch, commit)
        count += 1
    return count
