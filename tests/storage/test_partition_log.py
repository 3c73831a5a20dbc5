"""PartitionLog: append/read by offset, index seek, roll, LogAppendTime, validation,
offset_for_timestamp, header iteration, truncation and DeleteRecords."""

from __future__ import annotations

import os
import random
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from storage_helpers import make_batch

from groupcoord.logformat.batch import (
    LOG_APPEND_TIME,
    build_end_txn_marker,
    decode_records,
    iter_batches,
    parse_header,
    validate,
)
from groupcoord.storage.config import (
    InvalidRecordError,
    LogConfig,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
)
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.segment import segment_name


def _offsets(data: bytes) -> list[int]:
    return [h.base_offset for h, _ in iter_batches(data)]


def test_append_assigns_offsets_and_keeps_record_bytes(open_log) -> None:
    log = open_log()
    client = make_batch(3)
    info = log.append(client + make_batch(2), now_ms=5)
    assert (info.base_offset, info.last_offset) == (0, 4)
    assert info.log_append_time_ms == -1 and info.max_timestamp == 1000
    assert [h.base_offset for h in info.headers] == [0, 3]
    assert log.log_end_offset == 5
    stored = log.read(0, 1 << 20)
    assert _offsets(stored) == [0, 3]
    # Only the base offset differs, the CRC-covered bytes are the client's.
    assert stored[21:len(client)] == client[21:]


def test_read_by_offset_across_segments(open_log) -> None:
    log = open_log(segment_bytes=2000)
    for _ in range(100):
        log.append(make_batch(2))
    assert len(log.segments) > 5
    for offset in (0, 1, 57, 100, 199):
        data = log.read(offset, 300)
        (header, view), *_ = list(iter_batches(data))
        assert header.base_offset <= offset <= header.last_offset
        validate(view)
    assert log.read(200, 100) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(201, 100)


def test_read_returns_whole_batches_and_oversized_first(open_log) -> None:
    log = open_log()
    for _ in range(10):
        log.append(make_batch(1, value_size=500))
    size = len(log.read(0, 1 << 20)) // 10
    assert len(log.read(0, size * 3 + size // 2)) == size * 3
    assert len(log.read(0, 10)) == size  # first batch bigger than max_bytes comes whole
    assert _offsets(log.read(2, 1 << 20, max_offset=5)) == [2, 3, 4]
    assert log.read(5, 1 << 20, max_offset=5) == b""


def test_index_seek_matches_batches(open_log) -> None:
    log = open_log(index_interval_bytes=512)
    for i in range(300):
        log.append(make_batch(1 + i % 4, value_size=60))
    seg = log.active
    assert len(seg.offset_index.offsets) > 20
    for rel, pos in zip(seg.offset_index.offsets, seg.offset_index.positions):
        header = seg.read_header(pos)
        assert header is not None and header.last_offset == seg.base_offset + rel
    rng = random.Random(1)
    for offset in rng.sample(range(log.log_end_offset), 50):
        start = seg.offset_index.lookup(offset)
        found = seg.find_batch(offset)
        assert found is not None and found[0] >= start
        assert found[1].base_offset <= offset <= found[1].last_offset
    # Index files hold exactly the in-memory entries, in Kafka's entry sizes.
    assert os.path.getsize(seg.offset_index.path) == 8 * len(seg.offset_index.offsets)
    assert os.path.getsize(seg.time_index.path) == 12 * len(seg.time_index.timestamps)


def test_roll_by_size_names_segments_by_base_offset(open_log, log_dir: str) -> None:
    log = open_log(segment_bytes=1000)
    for _ in range(20):
        log.append(make_batch(1, value_size=200))
    assert all(s.size <= 1000 for s in log.segments)
    names = sorted(n for n in os.listdir(log_dir) if n.endswith(".log"))
    assert names == [segment_name(s.base_offset) + ".log" for s in log.segments]
    assert len(names[0]) == 24 and names[0] == "00000000000000000000.log"


def test_roll_by_time(open_log) -> None:
    log = open_log(now_ms=0, segment_ms=1000)
    log.append(make_batch(), now_ms=500)
    log.append(make_batch(), now_ms=900)
    assert len(log.segments) == 1
    log.append(make_batch(), now_ms=1500)
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert log.segments[0].time_index.last_timestamp == 1000  # final entry on roll


def test_log_append_time(open_log) -> None:
    log = open_log(message_timestamp_type=LOG_APPEND_TIME)
    info = log.append(make_batch(2, ts=5), now_ms=123_456)
    assert info.log_append_time_ms == 123_456
    header = validate(log.read(0, 1 << 20))
    assert header.timestamp_type == LOG_APPEND_TIME and header.max_timestamp == 123_456


def test_append_rejects_bad_input(open_log) -> None:
    log = open_log(max_message_bytes=2000)
    good = bytearray(make_batch())
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    with pytest.raises(InvalidRecordError, match="CRC"):
        log.append(bytes(good) + bytes(bad))
    with pytest.raises(InvalidRecordError, match="partial"):
        log.append(bytes(good) + bytes(good[:30]))
    with pytest.raises(InvalidRecordError):
        log.append(b"")
    with pytest.raises(RecordBatchTooLargeError):
        log.append(make_batch(1, value_size=3000))
    marker = build_end_txn_marker(1, 5, 0, 10)
    with pytest.raises(InvalidRecordError, match="control"):
        log.append(marker)
    assert log.log_end_offset == 0
    assert log.append(marker, allow_control=True).base_offset == 0


def test_append_pre_assigned(open_log) -> None:
    log = open_log()
    log.append(make_batch(2))
    info = log.append(make_batch(1, base_offset=10), assign_offsets=False)
    assert info.base_offset == 10 and log.log_end_offset == 11
    with pytest.raises(InvalidRecordError):
        log.append(make_batch(1, base_offset=3), assign_offsets=False)


def test_offset_for_timestamp(open_log) -> None:
    log = open_log(segment_bytes=1500, index_interval_bytes=200)
    for i in range(60):
        log.append(make_batch(2, ts=1000 + 10 * i))
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1000) == (0, 1000)
    assert log.offset_for_timestamp(1001) == (2, 1010)
    assert log.offset_for_timestamp(1300) == (60, 1300)
    assert log.offset_for_timestamp(1590) == (118, 1590)
    assert log.offset_for_timestamp(1591) is None
    assert log.offset_for_timestamp(-1) == (120, -1)
    assert log.offset_for_timestamp(-2) == (0, -1)
    assert log.offset_for_timestamp(-3) == (119, 1590)


def test_iter_batch_headers_and_batches(open_log) -> None:
    log = open_log(segment_bytes=1000)
    for i in range(30):
        log.append(make_batch(1, producer_id=7, producer_epoch=0, base_sequence=i))
    headers = list(log.iter_batch_headers(10))
    assert [h.base_sequence for h in headers] == list(range(10, 30))
    assert all(h.producer_id == 7 for h in headers)
    values = [decode_records(v)[0].key for v in log.iter_batches()]
    assert len(values) == 30


def test_truncate_to(open_log) -> None:
    log = open_log(segment_bytes=1000)
    for _ in range(30):
        log.append(make_batch(1, value_size=150))
    log.truncate_to(12)
    assert log.log_end_offset == 12
    assert parse_header(log.read(11, 100)).base_offset == 11
    assert log.append(make_batch()).base_offset == 12
    log.truncate_to(0)
    assert (log.log_start_offset, log.log_end_offset, len(log.segments)) == (0, 0, 1)
    assert log.append(make_batch()).base_offset == 0


def test_delete_records_before(open_log) -> None:
    log = open_log(segment_bytes=1000)
    for _ in range(30):
        log.append(make_batch(1, value_size=150))
    first_bases = [s.base_offset for s in log.segments]
    assert log.delete_records_before(first_bases[2] + 1) == first_bases[2] + 1
    assert log.segments[0].base_offset == first_bases[2]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(first_bases[2], 100)
    assert parse_header(log.read(first_bases[2] + 1, 100)).base_offset == first_bases[2] + 1
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(31)
    log.delete_records_before(30)
    assert (log.log_start_offset, log.log_end_offset) == (30, 30)
    assert log.append(make_batch()).base_offset == 30


def test_read_cut_uses_index_and_fits_most_whole_batches(open_log) -> None:
    log = open_log(index_interval_bytes=300)
    sizes = []
    for i in range(200):
        sizes.append(len(make_batch(1, value_size=20 + (i * 37) % 200)))
        log.append(make_batch(1, value_size=20 + (i * 37) % 200))
    assert len(log.active.offset_index.offsets) > 30
    rng = random.Random(7)
    for _ in range(200):
        offset = rng.randrange(200)
        max_bytes = rng.randrange(1, 20_000)
        data = log.read(offset, max_bytes)
        expected, total = 0, 0
        for size in sizes[offset:]:
            if total + size > max_bytes:
                break
            total += size
            expected += 1
        assert _offsets(bytes(data)) == list(range(offset, offset + max(expected, 1)))
        seg, position, length = log.read_range(offset, max_bytes)
        assert length == len(data) and seg is log.active
        assert os.pread(seg.fd, length, position) == bytes(data)


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(st.tuples(st.integers(1, 5), st.integers(0, 400)), min_size=1,
                        max_size=40),
       segment_bytes=st.integers(300, 5000), interval=st.integers(1, 2000))
def test_property_every_offset_reads_its_batch(batches: list[tuple[int, int]],
                                              segment_bytes: int, interval: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p-0")
        cfg = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval)
        log = PartitionLog.open(path, cfg)
        for count, size in batches:
            log.append(make_batch(count, value_size=size))
        total = sum(c for c, _ in batches)
        before = bytes(log.read(0, 1 << 30))
        log.close()
        log = PartitionLog.open(path, cfg, recovery_point=0)
        assert log.recovery_report.clean and log.log_end_offset == total
        for offset in range(total):
            header = parse_header(log.read(offset, 1))
            assert header.base_offset <= offset <= header.last_offset
        assert bytes(log.read(0, 1 << 30)) == before
        log.close()
