"""The analytics decoders against groupcoord.logformat's generated encoders (and back).

The two implementations are independent (the analytics layouts are hand-declared, the
logformat classes are generated from Kafka's JSON specs), so agreement in both directions on
every record type checks both.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from groupcoord.analytics.read.codec import CodecError, decode_versioned, encode_versioned
from groupcoord.analytics.read.reader import decode_offset_commit, decode_record, decode_share_state
from groupcoord.analytics.read.schema import CONSUMER_ASSIGNMENT, CONSUMER_SUBSCRIPTION
from groupcoord.logformat import coordinator_records as cr
from groupcoord.logformat.generated import consumer_group_current_member_assignment as cgcma
from groupcoord.logformat.generated import consumer_group_member_metadata as cgmm
from groupcoord.logformat.generated import coordinator_records as gen
from groupcoord.logformat.generated import group_metadata as gm
from groupcoord.logformat.generated import share_snapshot as ss

TID = bytes(range(16))


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def plain_ours(v: Any) -> Any:
    if isinstance(v, dict):
        return {snake(k): plain_ours(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain_ours(x) for x in v]
    return v


def plain_theirs(v: Any) -> Any:
    if hasattr(v, "__slots__") and not isinstance(v, (bytes, str)):
        return {s: plain_theirs(getattr(v, s)) for s in v.__slots__}
    if isinstance(v, (list, tuple)):
        return [plain_theirs(x) for x in v]
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    return v


def _cls(name: str) -> Any:
    return getattr(gen, name)


def _records() -> list[tuple[Any, Any, int | None]]:
    """(key, value, version) objects of every record type, with tagged fields set."""
    tp = _cls("ConsumerGroupCurrentMemberAssignmentValue")
    tps = cgcma.TopicPartitions
    classic = cgmm.ClassicMemberMetadata
    proto = cgmm.ClassicProtocol
    member = gm.MemberMetadata
    return [
        (gen.OffsetCommitKey(group="g", topic="t", partition=3),
         gen.OffsetCommitValue(offset=42, leader_epoch=7, metadata="m", commit_timestamp=5), 3),
        (gen.OffsetCommitKey(group="g", topic="t", partition=3),
         gen.OffsetCommitValue(offset=42, metadata="", commit_timestamp=5, expire_timestamp=9), 1),
        (gen.OffsetCommitKey(group="g", topic="t", partition=3),
         gen.OffsetCommitValue(offset=42, leader_epoch=1, metadata="é", commit_timestamp=5,
                               topic_id=TID), 4),
        (gen.OffsetCommitKey(group="g", topic="t", partition=3), None, None),
        (_cls("GroupMetadataKey")(group="g"), _cls("GroupMetadataValue")(
            protocol_type="consumer", generation=3, protocol="range", leader="a",
            current_state_timestamp=11, members=[member(
                member_id="a", group_instance_id="i", client_id="c", client_host="/h",
                rebalance_timeout=5, session_timeout=6, subscription=b"\x00\x01",
                assignment=b"")]), 3),
        (_cls("ConsumerGroupMetadataKey")(group_id="g"),
         _cls("ConsumerGroupMetadataValue")(epoch=4, metadata_hash=99), 0),
        (_cls("ConsumerGroupMemberMetadataKey")(group_id="g", member_id="m"),
         _cls("ConsumerGroupMemberMetadataValue")(
             instance_id=None, rack_id="r", client_id="c", client_host="h",
             subscribed_topic_names=["a", "b"], subscribed_topic_regex=None,
             rebalance_timeout_ms=100, server_assignor="uniform",
             classic_member_metadata=classic(session_timeout_ms=45000, supported_protocols=[
                 proto(name="range", metadata=b"xyz")])), 0),
        (_cls("ConsumerGroupTargetAssignmentMetadataKey")(group_id="g"),
         _cls("ConsumerGroupTargetAssignmentMetadataValue")(assignment_epoch=5,
                                                            assignment_timestamp=77), 0),
        (_cls("ConsumerGroupCurrentMemberAssignmentKey")(group_id="g", member_id="m"),
         tp(member_epoch=5, previous_member_epoch=4, state=1,
            assigned_partitions=[tps(topic_id=TID, partitions=[0, 2], assignment_epochs=[5, 5])],
            partitions_pending_revocation=[tps(topic_id=TID, partitions=[1])]), 0),
        (_cls("ShareGroupMetadataKey")(group_id="s"),
         _cls("ShareGroupMetadataValue")(epoch=2, metadata_hash=3), 0),
        (_cls("ConsumerGroupRegularExpressionKey")(group_id="g", regular_expression="a.*"),
         _cls("ConsumerGroupRegularExpressionValue")(topics=["ab"], version=3, timestamp=4), 0),
    ]


@pytest.mark.parametrize("key,value,version", _records(),
                         ids=lambda v: type(v).__name__ if hasattr(v, "__slots__") else str(v))
def test_decodes_logformat_encoding(key: Any, value: Any, version: int | None) -> None:
    kb = cr.encode_key(key)
    vb = None if value is None else cr.encode_value(value, version)
    rec = decode_record(kb, vb)
    assert rec is not None
    assert rec.record_type == key.RECORD_TYPE
    assert plain_ours(rec.key) == plain_theirs(key)
    if value is None:
        assert rec.value is None
        return
    ours = plain_ours(rec.value)
    theirs = plain_theirs(value)
    assert {k: ours[k] for k in theirs if k in ours} == {k: theirs[k] for k in theirs if k in ours}
    # and back: our encoding of what we decoded is what logformat decodes to the same object
    layout_bytes = encode_versioned(_layout(rec.record_type), rec.value, rec.value_version)
    assert cr.decode_value(rec.record_type, layout_bytes) == value


def _layout(record_type: int) -> Any:
    from groupcoord.analytics.read.schema import COORDINATOR_RECORDS

    return COORDINATOR_RECORDS[record_type][1]


def test_offset_commit_fast_path_matches_generic() -> None:
    for key, value, version in _records()[:4]:
        kb = cr.encode_key(key)
        vb = None if value is None else cr.encode_value(value, version)
        fast = decode_offset_commit(kb, vb)
        slow = decode_record(kb, vb)
        assert fast is not None and slow is not None
        assert (fast.group_id, fast.topic, fast.partition) == ("g", "t", 3)
        if vb is None:
            assert fast.committed_offset is None
            continue
        v = slow.value
        assert v is not None
        assert (fast.committed_offset, fast.leader_epoch, fast.metadata, fast.commit_ts,
                fast.expire_ts, fast.value_version) == (
            v["offset"], v["leaderEpoch"], v["metadata"], v["commitTimestamp"],
            v["expireTimestamp"], slow.value_version)


def test_fast_path_ignores_other_types() -> None:
    assert decode_offset_commit(cr.encode_key(_cls("GroupMetadataKey")(group="g")), None) is None


def test_unknown_record_type_is_skipped() -> None:
    assert decode_record(b"\x00\x63\x00\x01g", b"\x00\x00") is None


def test_truncated_value_raises_codec_error() -> None:
    kb = cr.encode_key(gen.OffsetCommitKey(group="g", topic="t", partition=0))
    vb = cr.encode_value(gen.OffsetCommitValue(offset=1, metadata="abc", commit_timestamp=2), 3)
    with pytest.raises(CodecError):
        decode_record(kb, vb[:-3])


def test_share_state_records() -> None:
    key = _cls("ShareSnapshotKey")(group_id="s", topic_id=TID, partition=1)
    batch = ss.StateBatch
    value = _cls("ShareSnapshotValue")(snapshot_epoch=1, state_epoch=2, leader_epoch=3,
                                       start_offset=10, create_timestamp=5, write_timestamp=6,
                                       state_batches=[batch(first_offset=10, last_offset=12,
                                                            delivery_state=0, delivery_count=1)])
    rec = decode_share_state(cr.encode_key(key), cr.encode_value(value, 0))
    assert rec is not None and rec.value is not None
    assert rec.value["StartOffset"] == 10
    assert rec.value["StateBatches"] == [{"FirstOffset": 10, "LastOffset": 12,
                                          "DeliveryState": 0, "DeliveryCount": 1}]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_consumer_protocol_round_trip(version: int) -> None:
    sub = {"topics": ["a", "b"], "userData": None,
           "ownedPartitions": [{"topic": "a", "partitions": [1]}], "generationId": 4,
           "rackId": "r1"}
    got = decode_versioned(CONSUMER_SUBSCRIPTION, encode_versioned(CONSUMER_SUBSCRIPTION, sub,
                                                                   version))
    assert got[0] == version and got[1]["topics"] == ["a", "b"]
    asg = {"assignedPartitions": [{"topic": "a", "partitions": [0, 3]}], "userData": b"u"}
    assert decode_versioned(CONSUMER_ASSIGNMENT, encode_versioned(
        CONSUMER_ASSIGNMENT, asg, version))[1] == asg
