"""Record batch v2: build/parse/validate, rewrites, control batches, and kafka-python as a
byte-level oracle in both directions."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from groupcoord.logformat.batch import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    HEADER_SIZE,
    LOG_APPEND_TIME,
    build_batch,
    build_end_txn_marker,
    compute_crc,
    control_record_type,
    decode_records,
    iter_batches,
    iter_log_batches,
    log_header_at,
    parse_header,
    records_payload,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate,
)
from groupcoord.logformat.compression import CompressionType
from groupcoord.logformat.record import CorruptRecordError, Record, iter_record_fields

SIMPLE = [
    (b"k1", b"v1", [("h", b"x"), ("n", None)], 1_700_000_000_000),
    (None, b"v2", [], 1_700_000_000_005),
    (b"k3", None, [], 1_700_000_000_003),
]


def test_build_parse_round_trip() -> None:
    data = build_batch(SIMPLE, base_offset=42, producer_id=7, producer_epoch=3,
                       base_sequence=10, partition_leader_epoch=5)
    header = validate(data)
    assert header.base_offset == 42
    assert header.size == len(data) and header.batch_length == len(data) - 12
    assert header.magic == 2 and header.records_count == 3
    assert header.last_offset_delta == 2 and header.last_offset == 44
    assert header.base_timestamp == 1_700_000_000_000
    assert header.max_timestamp == 1_700_000_000_005
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 3, 10)
    assert header.last_sequence == 12
    assert header.partition_leader_epoch == 5
    assert not header.is_control and not header.is_transactional
    assert header.compression == 0 and header.timestamp_type == 0
    records = decode_records(data)
    assert [r.offset_delta for r in records] == [0, 1, 2]
    assert [r.timestamp_delta for r in records] == [0, 5, 3]
    assert records[0].key == b"k1" and records[0].headers == [("h", b"x"), ("n", None)]
    assert records[1].key is None and records[2].value is None


@pytest.mark.parametrize("codec", list(CompressionType))
def test_every_compression_round_trips(codec: CompressionType) -> None:
    recs = [(b"key%d" % i, b"value" * i, [], 1000 + i) for i in range(200)]
    data = build_batch(recs, compression=codec)
    header = validate(data)
    assert header.compression == codec
    out = decode_records(data)
    assert [(r.key, r.value) for r in out] == [(k, v) for k, v, _, _ in recs]


def test_crc_corruption_detected() -> None:
    data = bytearray(build_batch(SIMPLE))
    for pos in (21, 40, HEADER_SIZE + 3, len(data) - 1):
        bad = bytearray(data)
        bad[pos] ^= 0x01
        with pytest.raises(CorruptRecordError, match="CRC"):
            validate(bad)


def test_bad_magic_and_length() -> None:
    data = bytearray(build_batch(SIMPLE))
    bad = bytearray(data)
    bad[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        validate(bad)
    with pytest.raises(CorruptRecordError, match="length"):
        validate(data + b"\x00")
    with pytest.raises(CorruptRecordError):
        validate(data[:30])


def test_records_count_mismatch_on_decode() -> None:
    data = bytearray(build_batch(SIMPLE))
    struct.pack_into(">i", data, 57, 4)
    struct.pack_into(">I", data, 17, compute_crc(data))
    validate(data)  # header-level checks pass, the records do not
    with pytest.raises(CorruptRecordError):
        decode_records(data)
    struct.pack_into(">i", data, 57, 2)
    struct.pack_into(">I", data, 17, compute_crc(data))
    with pytest.raises(CorruptRecordError, match="count"):
        decode_records(data)


def test_check_offsets_rejects_inconsistent_range() -> None:
    data = build_batch(SIMPLE, last_offset_delta=5)
    validate(data)
    with pytest.raises(CorruptRecordError, match="offset range"):
        validate(data, check_offsets=True)


def test_rewrites_keep_crc_valid() -> None:
    data = bytearray(build_batch(SIMPLE))
    crc = parse_header(data).crc
    set_base_offset(data, 0, 1234)
    set_partition_leader_epoch(data, 0, 9)
    header = validate(data)
    assert (header.base_offset, header.partition_leader_epoch, header.crc) == (1234, 9, crc)
    set_log_append_time(data, 0, 1_800_000_000_000)
    header = validate(data)
    assert header.timestamp_type == LOG_APPEND_TIME
    assert header.max_timestamp == 1_800_000_000_000 and header.crc != crc


def test_iter_batches_stops_at_partial_tail() -> None:
    one = build_batch(SIMPLE)
    two = build_batch(SIMPLE, base_offset=3)
    buf = one + two + two[:20]
    found = [(h.base_offset, bytes(v)) for h, v in iter_batches(buf)]
    assert found == [(0, one), (3, two)]
    assert list(iter_batches(one[:5])) == []


def test_iter_log_batches_stops_where_log_recovery_would() -> None:
    one = build_batch(SIMPLE)
    two = build_batch(SIMPLE, base_offset=3)
    assert [(p, h.base_offset) for p, h in iter_log_batches(one + two + two[:20])] == [
        (0, 0), (len(one), 3)]
    assert [p for p, _ in iter_log_batches(one + two, len(one))] == [len(one)]
    other_magic = bytearray(two)
    other_magic[16] = 1
    assert [p for p, _ in iter_log_batches(one + bytes(other_magic) + two)] == [0]
    short_length = bytearray(two)
    struct.pack_into(">i", short_length, 8, HEADER_SIZE - 13)
    assert [p for p, _ in iter_log_batches(bytes(short_length) + one)] == []
    assert log_header_at(one[:HEADER_SIZE - 1]) is None
    assert log_header_at(one[:HEADER_SIZE]) == parse_header(one)


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_record_fields_match_decoded_records(codec: int) -> None:
    rows = [(b"k", b"v", [("h", b"x")], 1000), (None, b"w" * 300, [], 900),
            (b"k2", None, [], 1200)]
    data = build_batch(rows, base_offset=7, compression=codec)
    header = parse_header(data)
    fields = list(iter_record_fields(records_payload(data, header), header.records_count))
    assert fields == [(r.offset_delta, r.timestamp_delta, r.key, r.value)
                      for r in decode_records(data)]
    assert fields[1] == (1, -100, None, b"w" * 300)


def test_record_fields_of_a_cut_records_section_raise() -> None:
    data = build_batch([(b"key", b"value", [], 1)])
    with pytest.raises(CorruptRecordError):
        list(iter_record_fields(memoryview(data)[HEADER_SIZE:-3], 1))


@pytest.mark.parametrize("kind", [CONTROL_ABORT, CONTROL_COMMIT])
def test_control_batches(kind: int) -> None:
    data = build_end_txn_marker(kind, producer_id=99, producer_epoch=2, timestamp=5,
                                coordinator_epoch=7)
    header = validate(data)
    assert header.is_control and header.is_transactional and header.producer_id == 99
    (record,) = decode_records(data)
    assert control_record_type(record) == kind
    assert record.value == struct.pack(">hi", 0, 7)
    oracle = DefaultRecordBatch(data)
    assert oracle.is_control_batch and oracle.is_transactional


def _oracle_build(codec: int, records: list[tuple]) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, (key, value, headers, ts) in enumerate(records):
        builder.append(i, ts, key, value, headers)
    return bytes(builder.build())


def test_byte_identical_to_kafka_python_uncompressed() -> None:
    expected = _oracle_build(0, SIMPLE)
    assert build_batch(SIMPLE, partition_leader_epoch=0) == expected


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decode_kafka_python_batches(codec: int) -> None:
    # Repetitive values: kafka-python leaves a batch uncompressed when that is smaller.
    records = [(b"k%d" % i, b"value-%d" % (i % 3) * 20, [("h", b"x")], 1000 + i)
               for i in range(50)]
    data = _oracle_build(codec, records)
    header = validate(data)
    assert header.compression == codec
    out = decode_records(data)
    assert [(r.key, r.value, list(r.headers)) for r in out] == [
        (k, v, h) for k, v, h, _ in records]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_kafka_python_reads_our_batches(codec: int) -> None:
    data = build_batch(SIMPLE, base_offset=10, compression=codec)
    batch = DefaultRecordBatch(data)
    assert batch.validate_crc()
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch]
    assert got == [(10 + i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(SIMPLE)]


_headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16)),
                    max_size=3)
_record = st.tuples(st.none() | st.binary(max_size=32), st.none() | st.binary(max_size=64),
                    _headers, st.integers(0, 2**41))


@settings(max_examples=150, deadline=None)
@given(records=st.lists(_record, min_size=1, max_size=12),
       codec=st.sampled_from(list(CompressionType)),
       base_offset=st.integers(0, 2**62), producer_id=st.integers(-1, 2**62))
def test_property_round_trip(records: list[tuple], codec: int, base_offset: int,
                             producer_id: int) -> None:
    data = build_batch(records, base_offset=base_offset, compression=codec,
                       producer_id=producer_id)
    header = validate(data, check_offsets=True)
    assert header.base_offset == base_offset and header.producer_id == producer_id
    base_ts = records[0][3]
    out = decode_records(data)
    assert [(r.key, r.value, list(r.headers), base_ts + r.timestamp_delta) for r in out] == [
        (k, v, h, ts) for k, v, h, ts in records]
    assert header.max_timestamp == max(ts for *_, ts in records)
    if codec in (0, 1):  # kafka-python's pure codecs agree on the bytes it reads
        assert [r.value for r in DefaultRecordBatch(data)] == [v for _, v, _, _ in records]


def test_records_with_explicit_deltas() -> None:
    recs = [Record(0, 0, b"a", b"1"), Record(3, 7, b"b", b"2")]
    data = build_batch(recs, base_timestamp=100)
    header = validate(data)
    assert header.last_offset_delta == 3 and header.max_timestamp == 107
    assert header.records_count == 2
    assert [r.offset_delta for r in decode_records(data)] == [0, 3]


@settings(max_examples=300, deadline=None)
@given(noise=st.binary(min_size=0, max_size=200), codec=st.sampled_from([0, 1, 2, 3, 4]))
def test_garbage_records_raise_corrupt_record_error(noise: bytes, codec: int) -> None:
    """A batch with a valid header and CRC but arbitrary records section fails cleanly."""
    template = bytearray(build_batch(SIMPLE, compression=codec))
    data = template[:HEADER_SIZE] + noise
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">I", data, 17, compute_crc(data))
    validate(data)
    try:
        decode_records(data)
    except CorruptRecordError:
        pass


@settings(max_examples=300, deadline=None)
@given(noise=st.binary(min_size=0, max_size=120))
def test_garbage_batches_fail_validation_cleanly(noise: bytes) -> None:
    try:
        validate(noise)
    except CorruptRecordError:
        pass
    try:
        for _header, view in iter_batches(noise):
            assert len(view) >= HEADER_SIZE - 12
    except CorruptRecordError:
        pass


def test_rows_encode_as_the_generic_record_encoder_does() -> None:
    # `_encode_rows` writes its varlongs inline; every record must still be byte-for-byte
    # what `_encode_record` writes (negative timestamp deltas, nulls, headers, long
    # values and offset deltas past one varint byte included).
    import random

    from groupcoord.logformat.record import Record, _encode_record, _encode_rows

    rnd = random.Random(7)
    rows = []
    for i in range(300):
        key = None if i % 7 == 0 else rnd.randbytes(rnd.choice([0, 5, 70, 200]))
        value = None if i % 5 == 0 else rnd.randbytes(rnd.choice([0, 9, 64, 9000]))
        headers = () if i % 3 else (("h", b"v"), ("n", None))
        rows.append((key, value, headers, 1_000 + rnd.randrange(-500, 500)))
    base = 1_000
    body, count, got_base, max_ts = _encode_rows(rows, base)
    expected = bytearray()
    for delta, (key, value, headers, ts) in enumerate(rows):
        _encode_record(expected, Record(delta, ts - base, key, value, tuple(headers)))
    assert (bytes(body), count, got_base, max_ts) == (
        bytes(expected), len(rows), base, max(r[3] for r in rows))
