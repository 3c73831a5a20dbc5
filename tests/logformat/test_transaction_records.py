"""`__transaction_state` key/value bytes: Kafka's TransactionLogKey/TransactionLogValue."""

from __future__ import annotations

import struct

import pytest

from groupcoord.logformat.transaction_records import (
    TransactionLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from groupcoord.wire.errors import DecodeError


def test_key_is_version_prefixed_string() -> None:
    assert encode_key("tx-1") == b"\x00\x00\x00\x04tx-1"
    assert decode_key(encode_key("tx-1")) == "tx-1"
    with pytest.raises(DecodeError):
        decode_key(b"\x00\x01\x00\x00")


def test_value_v0_bytes_match_kafka_layout() -> None:
    value = TransactionLogValue(7, 3, 60000, 1, {"t": [0, 2]}, 1234, 1000)
    raw = encode_value(value)
    assert raw is not None
    expected = (struct.pack(">hqhib", 0, 7, 3, 60000, 1) + struct.pack(">i", 1)
                + b"\x00\x01t" + struct.pack(">iii", 2, 0, 2) + struct.pack(">qq", 1234, 1000))
    assert raw == expected
    assert decode_value(raw) == (value, 0)


def test_empty_state_writes_null_partitions() -> None:
    value = TransactionLogValue(7, 0, 60000, 0, None, 5, -1)
    raw = encode_value(value)
    assert raw is not None and raw[17:21] == b"\xff\xff\xff\xff"
    assert decode_value(raw)[0] == value


def test_value_v1_flexible_with_tagged_fields() -> None:
    value = TransactionLogValue(7, 3, 60000, 4, {"a": [1], "b": [0, 5]}, 9, 8,
                                previous_producer_id=6, next_producer_id=-1,
                                client_transaction_version=2)
    raw = encode_value(value, version=1)
    assert raw is not None and raw[:2] == b"\x00\x01"
    assert decode_value(raw) == (value, 1)
    plain = TransactionLogValue(7, 3, 60000, 0, None, 9, -1)
    flexible = encode_value(plain, version=1)
    assert flexible is not None and flexible.endswith(b"\x00")  # no tagged fields
    assert decode_value(flexible)[0] == plain


def test_tombstone_and_bad_versions() -> None:
    assert encode_value(None) is None and decode_value(None) == (None, -1)
    with pytest.raises(DecodeError):
        decode_value(b"\x00\x05" + bytes(40))
    with pytest.raises(DecodeError):
        decode_value(b"\x00\x00\x00")
    with pytest.raises(ValueError):
        encode_value(TransactionLogValue(1, 0, 1, 0), version=2)
