"""``dump`` output against a golden file in Kafka's ``CoordinatorRecordMessageFormatter`` shape.

The log is written with logformat's generated classes and encoders; the golden lines were
checked by hand against the formatter rules (camelCase names, fields outside the version
omitted, tagged fields only when not default, bytes base64, uuids as ``Uuid.toString``).
"""

from __future__ import annotations

import json
from pathlib import Path

from groupcoord.analytics.fixture.logwriter import PartitionWriter
from groupcoord.analytics.read.dump import OFFSETS_TYPES, iter_dump, record_json
from groupcoord.logformat import coordinator_records as cr
from groupcoord.logformat.generated import consumer_group_current_member_assignment as cgcma
from groupcoord.logformat.generated import coordinator_records as gen
from groupcoord.logformat.generated import group_metadata as gm

GOLDEN = Path(__file__).parent / "golden" / "dump_small.jsonl"
TID = bytes(range(16))


def _kv(key: object, value: object | None, version: int | None = None) -> tuple[bytes, bytes | None]:
    return cr.encode_key(key), None if value is None else cr.encode_value(value, version)


def write_small_log(root: Path) -> None:
    w = PartitionWriter(root, "__consumer_offsets", 0)
    ock = gen.OffsetCommitKey(group="g1", topic="orders", partition=0)
    recs = [
        _kv(ock, gen.OffsetCommitValue(offset=42, leader_epoch=0, metadata="",
                                       commit_timestamp=1700000005000), 3),
        _kv(ock, gen.OffsetCommitValue(offset=43, metadata="m", commit_timestamp=1700000006000,
                                       expire_timestamp=1700086406000), 1),
        _kv(ock, gen.OffsetCommitValue(offset=44, leader_epoch=2, metadata="",
                                       commit_timestamp=1700000007000, topic_id=TID), 4),
        _kv(ock, None),
        _kv(gen.GroupMetadataKey(group="g1"), gen.GroupMetadataValue(
            protocol_type="consumer", generation=1, protocol="range", leader="m-1",
            current_state_timestamp=1700000000000, members=[gm.MemberMetadata(
                member_id="m-1", client_id="c", client_host="/127.0.0.1",
                rebalance_timeout=300000, session_timeout=45000, subscription=b"\x00\x01",
                assignment=b"")]), 3),
        _kv(gen.ConsumerGroupMetadataKey(group_id="cg"),
            gen.ConsumerGroupMetadataValue(epoch=3, metadata_hash=0), 0),
        _kv(gen.ConsumerGroupMetadataKey(group_id="cg"),
            gen.ConsumerGroupMetadataValue(epoch=4, metadata_hash=12345), 0),
        _kv(gen.ConsumerGroupCurrentMemberAssignmentKey(group_id="cg", member_id="x"),
            gen.ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=4, previous_member_epoch=3, state=0,
                assigned_partitions=[cgcma.TopicPartitions(topic_id=TID, partitions=[0, 1])],
                partitions_pending_revocation=[]), 0),
        (b"\x00\x63\x00\x01x", b"\x00\x00"),  # unknown type 99: skipped
    ]
    w.append([(k, v, 1700000010000) for k, v in recs])
    w.append([_kv(ock, gen.OffsetCommitValue(offset=999, commit_timestamp=1))[:2] + (1,)],
             producer_id=5, transactional=True)
    w.append_marker(5, False, 2)  # the commit above is aborted: never printed
    w.close()


def test_dump_matches_golden(tmp_path: Path) -> None:
    write_small_log(tmp_path)
    lines = list(iter_dump(tmp_path))
    assert lines == GOLDEN.read_text().splitlines()


def test_offsets_formatter_filter(tmp_path: Path) -> None:
    write_small_log(tmp_path)
    lines = [json.loads(x) for x in iter_dump(tmp_path, OFFSETS_TYPES)]
    assert [x["key"]["type"] for x in lines] == [1, 1, 1, 1]
    assert lines[-1]["value"] is None


def test_null_key_is_skipped() -> None:
    assert record_json(None, b"\x00\x00") is None


def test_share_state_dump(fixture_dir: tuple[Path, dict[str, object]]) -> None:
    root, _ = fixture_dir
    lines = [json.loads(x) for x in iter_dump(root, topic="__share_group_state")]
    assert [x["key"]["type"] for x in lines] == [0, 1]
    assert set(lines[0]["key"]["data"]) == {"groupId", "topicId", "partition"}
    assert lines[0]["value"]["data"]["stateBatches"][1]["deliveryCount"] == 3
    assert "deliveryCompleteCount" not in lines[1]["value"]["data"]  # tagged, default -1
