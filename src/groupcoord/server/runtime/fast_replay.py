"""Fast replay of a group shard's partition: keys first, superseded offset commits skipped.

Replaying `__consumer_offsets` record by record spends almost all its time decoding
records whose effect a later record of the same key undoes: a busy group commits the same
partitions over and over. This loader reads only each record's key while it scans, and
decodes and replays a value only when nothing later can supersede it. It keeps the effect
of the plain loader (`shard_log.replay_log`) exactly, by these rules:

- A *run* is a stretch of non-transactional records whose keys are offset commits (record
  types 0 and 1). Within a run, an offset commit's only effects are "the partition's
  committed offset is this value" (last write wins), "the group exists" (a put creates a
  simple classic group) and, for a tombstone, "drop the partition from every open
  transaction". So the last record of each key is the only one replayed, unless the key had
  a tombstone in the run: then every record of that key in the run is replayed, in order.
- A run ends at anything else: a record of another type (group metadata, consumer, share or
  streams group records, replayed one by one), a transactional batch or a transaction
  marker (replayed by the plain loader's `replay_batch`, whole). Committed offsets keep
  their record's log offset, which a later COMMIT marker compares against.
- A value that does not decode makes its key replay in full, like a tombstone: the plain
  loader skips such a record, so an earlier value of the key may be the one that counts.

Every applied record still goes through `shard.replay` (the one mutation path). A sink (the
snapshot builder, `shard_snapshot`) may receive what is replayed: the records of a run and
single records as (log offset, key, value) in offset order, and whole batches as bytes;
records this broker cannot read are passed on too (a newer broker may read them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from groupcoord.logformat.batch import (
    CONTROL_MASK,
    TRANSACTIONAL_MASK,
    CorruptRecordError,
    decode_record_at,
    parse_header,
    records_payload,
)
from groupcoord.logformat.coordinator_records import decode_record
from groupcoord.server.runtime.shard_log import NO_PRODUCER_ID, ProducerEpochs, replay_batch
from groupcoord.wire.errors import DecodeError
from groupcoord.wire.primitives import read_varlong

# (log offset, key, value or None for a tombstone)
RawRecord = tuple[int, bytes, bytes | None]
# Keys are flushed in slices this long (a few milliseconds of decoding), so a run of a
# million distinct keys does not hold the event loop in one step.
FLUSH_SLICE = 128
# A batch's records are scanned in slices this long for the same reason: one batch of a
# snapshot can hold every offset commit of the shard.
SCAN_SLICE = 4096


class ReplaySink(Protocol):
    """Receives what the fast replay applies, in log order."""

    def add_records(self, records: list[RawRecord]) -> None: ...

    def add_batch(self, batch: bytes) -> None: ...


class FastReplay:
    """Replays batches into a group shard; `steps` yields the running record count."""

    def __init__(self, shard: Any, producers: ProducerEpochs | None = None,
                 sink: ReplaySink | None = None) -> None:
        self.shard = shard
        self.producers = producers
        self.sink = sink
        self.count = 0
        # The open run: key -> its last record; keys with a tombstone (or an undecodable
        # value) in the run; the stretches of records sections the run covers.
        self._run: dict[bytes, int] = {}
        self._full_keys: set[bytes] = set()
        self._spans: list[tuple[bytes, int, int, int]] = []

    def steps(self, batches: Iterable[memoryview]) -> Iterator[int]:
        """Replay every batch; yield the count after each batch and during long flushes."""
        for view in batches:
            header = parse_header(view)
            if header.attributes & (TRANSACTIONAL_MASK | CONTROL_MASK):
                yield from self.flush()
                if self.sink is not None:
                    self.sink.add_batch(bytes(view))
                self.count += replay_batch(view, self.shard, self.producers)
            else:
                yield from self._scan_batch(view, header)
            yield self.count
        yield from self.flush()
        yield self.count

    # -- scanning ----------------------------------------------------------------------

    def _scan_batch(self, view: memoryview, header: Any) -> Iterator[int]:
        data = bytes(records_payload(view, header))
        base = header.base_offset
        pos, end, seen = 0, len(data), 0
        while True:
            span = len(self._spans)
            try:
                stop, scanned = _scan(data, pos, end, span << 32, self._run, self._full_keys,
                                      SCAN_SLICE)
            except (IndexError, DecodeError) as exc:
                raise CorruptRecordError(f"malformed record: {exc}") from exc
            seen += scanned
            self.count += scanned
            if scanned:
                self._spans.append((data, pos, stop, base))
            if stop >= end:
                break
            if scanned == SCAN_SLICE:
                # The slice ended, not the run: the loop takes a turn, then the scan goes
                # on (a record of another type there scans as none and is handled below).
                pos = stop
                yield self.count
                continue
            # A record of another type: the run ends before it, and it is replayed alone.
            yield from self.flush()
            offset, key, value, pos = _read_record(data, stop, base)
            seen += 1
            self._replay_single(offset, key, value)
        if stop != end or seen != header.records_count:
            raise CorruptRecordError("records count does not match the records section")

    def _replay_single(self, offset: int, key: bytes, value: bytes | None) -> None:
        if self.sink is not None:
            # Kept even when this broker cannot read it: a newer one may.
            self.sink.add_records([(offset, key, value)])
        try:
            record = decode_record(key, value)
        except ValueError:
            return  # unknown record types (a newer writer) are skipped, as the plain loader
        self.shard.replay(record, offset, NO_PRODUCER_ID, -1)
        self.count += 1

    # -- flushing a run ----------------------------------------------------------------

    def flush(self) -> Iterator[int]:
        """Apply the open run: the last record of each key, or every record of a key whose
        last record alone would not give the plain loader's effect."""
        run, full_keys = self._run, self._full_keys
        if not run:
            return
        replay, keep = self.shard.replay, self.sink is not None
        applied: list[RawRecord] = []
        spans = self._spans
        for n, (key, where) in enumerate(run.items(), 1):
            if key in full_keys:
                continue
            data, _, _, base = spans[where >> 32]
            delta, value = _delta_and_value(data, where & 0xFFFFFFFF)
            offset = base + delta
            try:
                record = decode_record(key, value)
            except ValueError:
                full_keys.add(key)
                continue
            replay(record, offset, NO_PRODUCER_ID, -1)
            if keep:
                applied.append((offset, key, value))
            if n % FLUSH_SLICE == 0:
                yield self.count
        if full_keys:
            for offset, key, value in self._records_of(full_keys):
                applied.append((offset, key, value))
                try:
                    record = decode_record(key, value)
                except ValueError:
                    continue
                replay(record, offset, NO_PRODUCER_ID, -1)
        if self.sink is not None:
            applied.sort(key=_offset_of)
            self.sink.add_records(applied)
        run.clear()
        full_keys.clear()
        self._spans.clear()

    def _records_of(self, keys: set[bytes]) -> Iterator[RawRecord]:
        """Every record of `keys` in the open run, in log order (a second scan)."""
        for data, pos, stop, base in self._spans:
            while pos < stop:
                offset, key, value, pos = _read_record(data, pos, base)
                if key in keys:
                    yield offset, key, value


def _offset_of(record: RawRecord) -> int:
    return record[0]


def _scan(data: bytes, pos: int, end: int, span: int, run: dict[bytes, int],
          full_keys: set[bytes], limit: int) -> tuple[int, int]:
    """Scan at most `limit` offset-commit records from `pos`, noting in `run` where each
    key's last record starts (`span` << 32 | position: one int, no tuple per record).

    Returns (position, records scanned): `end` when the section is done, else the start
    of the first record whose key is not an offset commit or, after `limit` records, of
    the next record. Varints of one and two bytes
    (every record length below 8192) are read inline and the deltas only skipped: this
    loop is the cost of a cold load.
    """
    count = 0
    while pos < end and count < limit:
        start = pos
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            length = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            length, pos = read_varlong(data, pos)
        record_end = pos + length
        p = pos + 1  # past the attributes; then skip the timestamp and offset deltas
        while data[p] & 0x80:
            p += 1
        p += 1
        while data[p] & 0x80:
            p += 1
        b = data[p + 1]
        if b < 0x80:
            key_size = (b >> 1) ^ -(b & 1)
            p += 2
        else:
            key_size, p = read_varlong(data, p + 1)
        # An offset commit key starts with record type 0 or 1 as an int16.
        if key_size < 2 or data[p] or data[p + 1] > 1 or record_end > end:
            return start, count
        key = data[p:p + key_size]
        if data[p + key_size] == 1:  # zigzag(-1): a null value, a tombstone
            full_keys.add(key)
        run[key] = span | start
        pos = record_end
        count += 1
    return pos, count


def _delta_and_value(data: bytes, pos: int) -> tuple[int, bytes | None]:
    """Offset delta and value of the record at `pos`, one `_scan` has read already."""
    _, pos = read_varlong(data, pos)  # length
    _, pos = read_varlong(data, pos + 1)  # past the attributes: the timestamp delta
    delta, pos = read_varlong(data, pos)
    size, pos = read_varlong(data, pos)
    size, pos = read_varlong(data, pos + size)
    return delta, None if size < 0 else data[pos:pos + size]


def _read_record(data: bytes, pos: int, base: int) -> tuple[int, bytes, bytes | None, int]:
    """(log offset, key, value, next position) of the record at `pos`, any key type."""
    record, next_pos = decode_record_at(data, pos)
    return base + record.offset_delta, record.key or b"", record.value, next_pos
