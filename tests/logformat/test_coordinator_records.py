"""Coordinator record framing: Kafka's byte layout, version choice, tombstones, unknown types.

The hand-built byte strings follow the layout in Kafka's ``CoordinatorRecordSerde`` and the
record JSON specs: key = int16 record type + key struct at v0; value = int16 version + value
struct (classic strings are int16-length, flexible ones uvarint length + 1).
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from groupcoord.logformat.coordinator_records import (
    GROUP,
    SHARE,
    CoordinatorRecord,
    UnknownRecordTypeError,
    decode_key,
    decode_record,
    decode_value,
    encode_key,
    encode_value,
    value_version,
)
from groupcoord.logformat.generated.coordinator_records import (
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    ShareSnapshotKey,
    ShareSnapshotValue,
)
from groupcoord.wire.errors import DecodeError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wire"))
from wire_strategies import Case, all_cases, instance


def s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def test_offset_commit_key_layout() -> None:
    key = OffsetCommitKey(group="g", topic="t", partition=7)
    expected = struct.pack(">h", 1) + s16("g") + s16("t") + struct.pack(">i", 7)
    assert encode_key(key) == expected
    assert decode_key(expected) == key


def test_offset_commit_value_v3_layout() -> None:
    value = OffsetCommitValue(offset=42, leader_epoch=5, metadata="meta",
                              commit_timestamp=1700000005000)
    expected = (struct.pack(">hqi", 3, 42, 5) + s16("meta") + struct.pack(">q", 1700000005000))
    assert value_version(value) == 3
    assert encode_value(value) == expected
    assert decode_value(1, expected) == value


def test_offset_commit_value_v1_when_expire_timestamp_set() -> None:
    value = OffsetCommitValue(offset=1, metadata="", commit_timestamp=10, expire_timestamp=99)
    expected = struct.pack(">hq", 1, 1) + s16("") + struct.pack(">qq", 10, 99)
    assert encode_value(value) == expected
    decoded = decode_value(1, expected)
    assert decoded == value
    assert decoded.leader_epoch == -1  # absent before v3: Kafka's default


def test_group_metadata_value_v3_layout() -> None:
    member = GroupMetadataValue.MemberMetadata(
        member_id="m-1", group_instance_id=None, client_id="c", client_host="/127.0.0.1",
        rebalance_timeout=300000, session_timeout=45000, subscription=b"S", assignment=b"AA")
    value = GroupMetadataValue(protocol_type="consumer", generation=3, protocol="range",
                               leader="m-1", current_state_timestamp=1234, members=[member])
    expected = (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 3) + s16("range")
                + s16("m-1") + struct.pack(">q", 1234) + struct.pack(">i", 1)
                + s16("m-1") + b"\xff\xff" + s16("c") + s16("/127.0.0.1")
                + struct.pack(">ii", 300000, 45000) + struct.pack(">i", 1) + b"S"
                + struct.pack(">i", 2) + b"AA")
    assert encode_value(value) == expected
    assert decode_value(2, expected) == value
    assert encode_key(GroupMetadataKey(group="grp")) == b"\x00\x02" + s16("grp")


def test_modern_records_are_flexible_v0() -> None:
    key = ConsumerGroupMetadataKey(group_id="g")
    assert encode_key(key) == b"\x00\x03" + s16("g")  # keys are never flexible
    value = ConsumerGroupMetadataValue(epoch=7)
    raw = encode_value(value)
    # version 0, epoch, then the tagged-field section: MetadataHash is tagged, default 0.
    assert raw == b"\x00\x00" + struct.pack(">i", 7) + b"\x00"
    member = ConsumerGroupMemberMetadataValue(client_id="c", client_host="h",
                                              subscribed_topic_names=["a"])
    raw = encode_value(member)
    assert raw[:2] == b"\x00\x00"
    assert b"\x02c\x02h" in raw  # compact strings: uvarint length + 1
    assert decode_value(5, raw) == member


def test_tombstone_and_record_round_trip() -> None:
    key = OffsetCommitKey(group="g", topic="t", partition=0)
    assert decode_value(1, None) is None
    record = decode_record(encode_key(key), None)
    assert record == CoordinatorRecord(key, None)
    live = CoordinatorRecord(key, OffsetCommitValue(offset=5))
    again = decode_record(live.key_bytes(), live.value_bytes())
    assert again.key == key and again.value == live.value and again.value_version == 3
    assert live.record_type == 1


def test_unknown_record_type_is_catchable() -> None:
    with pytest.raises(UnknownRecordTypeError) as info:
        decode_key(b"\x00\x63" + s16("g"))
    assert info.value.record_type == 99
    with pytest.raises(UnknownRecordTypeError):
        decode_value(99, b"\x00\x00")
    # Streams records (types 17+) are known and decode; share types live in their own table.
    with pytest.raises(UnknownRecordTypeError):
        decode_key(b"\x00\x05", SHARE)


def test_malformed_records_raise_decode_error() -> None:
    for raw in (b"", b"\x00", b"\x00\x01\x00\x05ab"):
        with pytest.raises(DecodeError):
            decode_key(raw)
    with pytest.raises(DecodeError):
        decode_value(1, b"\x00\x09" + bytes(20))  # OffsetCommitValue has no version 9


def test_share_state_records() -> None:
    key = ShareSnapshotKey(group_id="g", topic_id=bytes(range(16)), partition=3)
    value = ShareSnapshotValue(snapshot_epoch=1, state_epoch=2, leader_epoch=3, start_offset=10,
                               state_batches=[ShareSnapshotValue.StateBatch(
                                   first_offset=10, last_offset=12, delivery_state=0,
                                   delivery_count=1)])
    raw_key = encode_key(key)
    assert raw_key[:2] == b"\x00\x00"
    record = decode_record(raw_key, encode_value(value), SHARE)
    assert (record.key, record.value) == (key, value)


RECORD_CASES = [c for c in all_cases() if c.spec.kind.startswith("coordinator")]


@pytest.mark.parametrize("case", RECORD_CASES, ids=[c.id for c in RECORD_CASES])
def test_every_record_type_round_trips_through_framing(case: Case) -> None:
    types = SHARE if case.spec.source.startswith("Share") and case.spec.name in (
        "ShareSnapshotKey", "ShareSnapshotValue", "ShareUpdateKey", "ShareUpdateValue") else GROUP
    is_key = case.spec.kind == "coordinator-key"
    version = 0 if is_key else case.spec.valid.hi

    @settings(max_examples=5, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(obj=instance(case, version))
    def check(obj: Any) -> None:
        if is_key:
            assert decode_key(encode_key(obj), types) == obj
        else:
            raw = encode_value(obj, version)
            assert decode_value(case.spec.api_key, raw, types) == obj

    check()


def test_an_offset_commit_record_carries_its_encoded_key() -> None:
    from groupcoord.coordinator.records import offset_commit_record
    from groupcoord.logformat.coordinator_records import CoordinatorRecord, encode_key

    first = offset_commit_record("g", "t", 3, 10, -1, "", 1, -1, bytes(16))
    again = offset_commit_record("g", "t", 3, 11, -1, "", 2, -1, bytes(16))
    assert first.key_bytes() == encode_key(first.key) == again.key_bytes()
    assert first.encoded_key is again.encoded_key  # encoded once per partition
    # Equality is the key and value's: a record built without the bytes equals it.
    assert CoordinatorRecord(first.key, first.value, first.value_version) == first
