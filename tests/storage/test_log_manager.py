"""LogManager: create/open partitions, topic ids in partition.metadata, load on start with
checkpoints, per-topic configs, topic deletion."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from storage_helpers import make_batch

from groupcoord.logformat.batch import parse_header
from groupcoord.storage.manager import LogManager, parse_partition_dir
from groupcoord.storage.metadata import (
    read_checkpoint,
    topic_id_from_str,
    topic_id_to_str,
)

TOPIC_ID = uuid.UUID("7b1c2e4f-0a2b-4c6d-8e9f-101112131415").bytes


def test_partition_metadata_matches_kafka_format(tmp_path: Path) -> None:
    mgr = LogManager(str(tmp_path))
    mgr.get_or_create("orders", 0, TOPIC_ID)
    text = (tmp_path / "orders-0" / "partition.metadata").read_text()
    assert text == f"version: 0\ntopic_id: {topic_id_to_str(TOPIC_ID)}\n"
    assert topic_id_to_str(TOPIC_ID) == "exwuTworTG2OnxAREhMUFQ"  # Uuid.toString form
    assert topic_id_from_str("exwuTworTG2OnxAREhMUFQ") == TOPIC_ID
    mgr.close()


def test_load_all_lists_topics_and_recovers(tmp_path: Path) -> None:
    mgr = LogManager(str(tmp_path))
    for p in range(3):
        mgr.get_or_create("my-topic", p, TOPIC_ID).append(make_batch(p + 1))
    mgr.get_or_create("__consumer_offsets", 7, uuid.UUID(int=5).bytes)
    mgr.get("my-topic", 1).delete_records_before(1)  # type: ignore[union-attr]
    mgr.close()
    with open(tmp_path / "my-topic-2" / "00000000000000000000.log", "ab") as f:
        f.write(b"torn")
    mgr = LogManager(str(tmp_path))
    reports = {os.path.basename(r.path): r for r in mgr.load_all()}
    assert set(reports) == {"my-topic-0", "my-topic-1", "my-topic-2", "__consumer_offsets-7"}
    assert reports["my-topic-2"].bytes_truncated == 4
    topics = mgr.topics()
    assert topics["my-topic"].partitions == 3 and topics["my-topic"].topic_id == TOPIC_ID
    assert topics["__consumer_offsets"].partitions == 8
    assert mgr.get("my-topic", 1).log_start_offset == 1  # type: ignore[union-attr]
    assert mgr.get("my-topic", 2).log_end_offset == 3  # type: ignore[union-attr]
    points = read_checkpoint(str(tmp_path / "recovery-point-offset-checkpoint"))
    assert points[("my-topic", 0)] == 1
    mgr.close()


def test_delete_topic(tmp_path: Path) -> None:
    mgr = LogManager(str(tmp_path))
    for p in range(2):
        mgr.get_or_create("gone", p, TOPIC_ID).append(make_batch())
    mgr.get_or_create("kept", 0)
    assert mgr.delete_topic("gone") == 2
    assert sorted(n for n in os.listdir(tmp_path) if not n.endswith("checkpoint")) == [
        "kept-0"]
    assert "gone" not in mgr.topics()
    os.makedirs(tmp_path / f"old-0.{uuid.uuid4().hex}-delete")
    mgr.close()
    mgr = LogManager(str(tmp_path))
    mgr.load_all()
    assert list(mgr.topics()) == ["kept"]
    assert not any(n.endswith("-delete") for n in os.listdir(tmp_path))
    mgr.close()


def test_topic_config_overrides(tmp_path: Path) -> None:
    mgr = LogManager(str(tmp_path), topic_configs={"small": {"segment.bytes": 500}})
    log = mgr.get_or_create("small", 0)
    for _ in range(5):
        log.append(make_batch(1, value_size=200))
    assert len(log.segments) == 5
    mgr.set_topic_config("small", {"retention.bytes": 0, "retention.ms": -1})
    assert mgr.delete_expired() == 5  # the active segment too, as Kafka: none may stay
    assert log.size == 0 and log.log_start_offset == log.log_end_offset == 5
    assert mgr.config_for("other").segment_bytes == 1 << 30
    mgr.close()


def test_parse_partition_dir() -> None:
    assert parse_partition_dir("a-b-c-12") == ("a-b-c", 12)
    assert parse_partition_dir("t-0.abc-delete") is None
    assert parse_partition_dir("nodash") is None
    assert parse_partition_dir("-3") is None


def test_clean_shutdown_marker_skips_the_scan_and_a_crash_does_not(tmp_path: Path) -> None:
    marker = tmp_path / ".kafka_cleanshutdown"
    mgr = LogManager(str(tmp_path))
    log = mgr.get_or_create("orders", 0, TOPIC_ID)
    for _ in range(50):
        log.append(make_batch(value_size=300))
    mgr.close()
    assert marker.exists()

    mgr = LogManager(str(tmp_path))
    [report] = mgr.load_all()
    assert report.segments_recovered == 0, "a cleanly closed log is not scanned"
    assert not marker.exists(), "the marker must go as soon as the logs are written again"
    log = mgr.get("orders", 0)
    assert log is not None and log.log_end_offset == 50
    assert log.append(make_batch()).base_offset == 50
    log.flush()
    # A crash now: no close, so no marker; the next load scans and repairs.
    path = log.active.log_path
    with open(path, "ab") as f:
        f.write(b"torn" * 10)
    mgr = LogManager(str(tmp_path))
    [report] = mgr.load_all()
    assert report.segments_recovered == 1 and report.bytes_truncated == 40
    reopened = mgr.get("orders", 0)
    assert reopened is not None and reopened.log_end_offset == 51
    mgr.close()


def test_replay_repairs_damage_a_clean_start_did_not_scan(tmp_path: Path) -> None:
    mgr = LogManager(str(tmp_path))
    log = mgr.get_or_create("__consumer_offsets", 3)
    for _ in range(40):
        log.append(make_batch(value_size=100))
    mgr.close()
    path = tmp_path / "__consumer_offsets-3" / "00000000000000000000.log"
    with open(path, "r+b") as f:
        f.seek(900)
        f.write(b"\xaa" * 64)
    mgr = LogManager(str(tmp_path))
    mgr.load_all()
    log = mgr.get("__consumer_offsets", 3)
    assert log is not None
    offsets = [parse_header(v).base_offset for v in log.iter_batches()]
    [damage] = log.recovery_report.damaged
    assert offsets == [o for o in range(40) if o != damage.first_offset]
    assert damage.resume_offset == damage.first_offset + 1
    assert [parse_header(v).base_offset for v in log.iter_batches()] == offsets
    mgr.close()
