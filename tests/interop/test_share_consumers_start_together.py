"""Four Java 4.4 `KafkaShareConsumer`s started together on a four-partition topic that
already holds its records share the work, on Apache Kafka 4.4 and on groupcoord alike.

A share group is assigned only share-partitions whose state is initialized, and the
initialization runs after the first heartbeat's reply: the first member joins with nothing,
and the partitions arrive at a later heartbeat, spread over every member that has joined by
then (`GroupMetadataManager.shareGroupHeartbeat`, `initializedAssignmentPending`). Assigning
before the state exists gave the first member every partition, and it drained the topic
before the others were given any.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers import java
from helpers.confluent_io import create_share_topic, produce_ids
from helpers.reference_broker import ReferenceBroker, log_event

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

CONSUMERS = 4
PARTITIONS = 4
# Enough that no consumer drains the topic within one heartbeat interval (5 s) of joining.
RECORDS = 20_000
RUN_TIMEOUT_S = 150.0


def accepted_ids(count: int) -> list[int]:
    """Ids the harness accepts on first delivery (`ShareConsumeMode.decide`: id % 10 not in
    1, 2, 3), so every record is delivered exactly once."""
    out, candidate = [], 0
    while len(out) < count:
        if candidate % 10 not in (1, 2, 3):
            out.append(candidate)
        candidate += 1
    return out


def consume_together(bootstrap: str, tmp_path: Path, label: str) -> Counter[str]:
    """Start the consumers at once on a topic that holds every record; return how many
    records each received once all were accepted."""
    topic, group = f"share-init-{label}", f"share-init-{label}-g"
    create_share_topic(bootstrap, topic, group, PARTITIONS, {"share.auto.offset.reset": "earliest"})
    ids = accepted_ids(RECORDS)
    produce_ids(bootstrap, topic, ids, PARTITIONS, batch_records=500)
    marks = tmp_path / f"marks-{label}"
    marks.mkdir()
    procs = []
    for index in range(CONSUMERS):
        out = open(tmp_path / f"{label}-{index}.out", "w")  # noqa: SIM115 - closed below
        procs.append((subprocess.Popen(
            [*java.harness_command("share-consume"), "--bootstrap", bootstrap, "--topic", topic,
             "--group", group, "--dir", str(marks), "--timeout-ms", str(int(RUN_TIMEOUT_S * 1000))],
            stdout=out, stderr=subprocess.DEVNULL), out))
    expected = {f"done-{i}" for i in ids}
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline and not expected <= set(os.listdir(marks)):
        time.sleep(0.5)
    (marks / "stop").touch()
    counts: Counter[str] = Counter()
    for index, (proc, out) in enumerate(procs):
        assert proc.wait(60) == 0
        out.close()
        for line in (tmp_path / f"{label}-{index}.out").read_text().splitlines():
            if json.loads(line).get("event") == "share-record":
                counts[f"consumer{index}"] += 1
    log_event(f"{label}: records per consumer {dict(sorted(counts.items()))}")
    assert expected <= set(os.listdir(marks)), "not every record was accepted"
    return counts


def check_shared(counts: Counter[str]) -> None:
    assert sum(counts.values()) == RECORDS  # accepted once each, never redelivered
    # Every consumer received records: none was left without partitions while the first
    # one drained the topic.
    assert [counts[f"consumer{i}"] > 0 for i in range(CONSUMERS)] == [True] * CONSUMERS, counts


def test_four_share_consumers_started_together_share_the_work(
        broker: object, java_harness: Path, tmp_path: Path) -> None:
    check_shared(consume_together(broker.bootstrap, tmp_path, "groupcoord"))  # type: ignore[attr-defined]


@pytest.mark.reference
def test_four_share_consumers_started_together_share_the_work_on_kafka(
        kafka: ReferenceBroker, java_harness: Path, tmp_path: Path) -> None:
    check_shared(consume_together(kafka.bootstrap, tmp_path, "kafka"))
