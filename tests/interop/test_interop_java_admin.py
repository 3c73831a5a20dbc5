"""The 4.4 Java Admin client over every group type, against groupcoord and Apache Kafka 4.4.

One scenario, run on both brokers with the same expectations: a classic group and a consumer
group (KafkaConsumer with `group.protocol` classic and consumer) consume a topic and commit;
a share group (KafkaShareConsumer, explicit ACCEPT and RELEASE) finishes every record of another
topic. Then the Admin client must see:

- listGroups without a filter, by type (KIP-1043) and by type and state, with each group's
  type, state and protocol type;
- describeConsumerGroups of the classic and the consumer group (type, state, no members);
- describeShareGroups while the share consumer runs (one member owning both partitions) and
  once it left (Empty), GroupIdNotFoundException for a group that never existed;
- listShareGroupOffsets with no lag left on both partitions; alterShareGroupOffsets refused
  with GroupNotEmptyException while the member runs, accepted once the group is Empty and
  seen in the next listing; deleteShareGroupOffsets of the topic; deleteShareGroups, after
  which the group is gone; deleteConsumerGroups of the other two.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import java
from helpers.confluent_io import create_share_topic, produce_ids
from helpers.reference_broker import ReferenceBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

DATA_PARTITIONS = 3
DATA_RECORDS = 30
SHARE_PARTITIONS = 2
# Ids the share consumer accepts (id % 10 in 0, 4..9) or releases once and then accepts (1):
# no REJECT and no delivery-limit archive, whose KIP-1191 dead-letter step (ARCHIVING) keeps
# Kafka's persisted start offset behind (docs/conformance.md, known differences).
SHARE_IDS = [i for i in range(30) if i % 10 not in (2, 3)][:20]
DELIVERY_LIMIT = 3
CLASSIC, CONSUMER, SHARE = "adm4-classic", "adm4-consumer", "adm4-share"
OURS = {CLASSIC, CONSUMER, SHARE}


def test_java_admin_all_group_types(broker: Any, java_harness: Path, tmp_path: Path) -> None:
    run_scenario(broker.bootstrap, tmp_path)


@pytest.mark.reference
def test_java_admin_all_group_types_on_kafka(kafka: ReferenceBroker, java_harness: Path,
                                             tmp_path: Path) -> None:
    """The same expectations hold for Apache Kafka 4.4.0: they are Kafka's behaviour."""
    run_scenario(kafka.bootstrap, tmp_path)


def harness(mode: str, bootstrap: str, *options: str) -> java.HarnessRun:
    return java.run_harness(mode, bootstrap, *options)


def run_scenario(bootstrap: str, tmp_path: Path) -> None:
    _consumer_groups(bootstrap)
    marks = tmp_path / "marks"
    marks.mkdir()
    share = _start_share_consumer(bootstrap, marks, tmp_path / "share.out")
    try:
        _wait_done(marks, SHARE_IDS)
        _check_live_share_group(bootstrap)
    finally:
        (marks / "stop").touch()
        assert share.wait(60) == 0
    assert "share-commit-error" not in (tmp_path / "share.out").read_text()
    _check_listing(bootstrap)
    _check_descriptions(bootstrap)
    _check_share_offsets(bootstrap)
    _check_deletes(bootstrap)


def _consumer_groups(bootstrap: str) -> None:
    harness("create-topic", bootstrap, "--topic", "adm4-data",
            "--partitions", str(DATA_PARTITIONS))
    run = harness("produce", bootstrap, "--topic", "adm4-data", "--count", str(DATA_RECORDS),
                  "--base-ts", "1700000000000")
    assert run.of("produced")[-1]["acked"] == DATA_RECORDS
    for group, protocol in ((CLASSIC, "classic"), (CONSUMER, "consumer")):
        run = harness("consume-group", bootstrap, "--topic", "adm4-data", "--group", group,
                      "--count", str(DATA_RECORDS), "--group-protocol", protocol)
        assert run.of("consumed")[-1]["count"] == DATA_RECORDS
        assert run.of("assigned"), run.events


def _start_share_consumer(bootstrap: str, marks: Path, out_path: Path) -> subprocess.Popen[bytes]:
    create_share_topic(bootstrap, "adm4-sq", SHARE, SHARE_PARTITIONS, {
        "share.auto.offset.reset": "earliest",
        "share.delivery.count.limit": str(DELIVERY_LIMIT)})
    produce_ids(bootstrap, "adm4-sq", SHARE_IDS, SHARE_PARTITIONS)
    with out_path.open("wb") as out:
        return subprocess.Popen(
            [*java.harness_command("share-consume"), "--bootstrap", bootstrap,
             "--topic", "adm4-sq", "--group", SHARE, "--dir", str(marks),
             "--limit", str(DELIVERY_LIMIT), "--timeout-ms", "120000"],
            stdout=out, stderr=subprocess.DEVNULL)


def _wait_done(marks: Path, ids: list[int]) -> None:
    expected = {f"done-{i}" for i in ids}
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not expected <= set(os.listdir(marks)):
        time.sleep(0.2)
    assert expected <= set(os.listdir(marks)), sorted(expected - set(os.listdir(marks)))


def _share_offsets(bootstrap: str) -> dict[int, tuple[int | None, int | None]]:
    run = harness("share-group-offsets", bootstrap, "--group", SHARE)
    return {e["partition"]: (e["startOffset"], e["lag"]) for e in run.of("share-offset")}


def _check_live_share_group(bootstrap: str) -> None:
    [described] = harness("describe-share-groups", bootstrap, "--groups", SHARE).of(
        "share-described")
    assert described["state"] == "Stable", described
    [member] = described["members"]
    assert sorted(map(tuple, member["assignment"])) == [("adm4-sq", 0), ("adm4-sq", 1)]
    assert member["memberEpoch"] == described["groupEpoch"] == described["assignmentEpoch"]
    altered = harness("alter-share-group-offsets", bootstrap, "--group", SHARE,
                      "--topic", "adm4-sq", "--offsets", "0:0").of("share-offset-altered")
    assert [(e["partition"], e["error"]) for e in altered] == [(0, "GroupNotEmptyException")]


def _listing(bootstrap: str, *filters: str) -> dict[str, tuple[str, str, str]]:
    run = harness("list-groups", bootstrap, *filters)
    return {e["groupId"]: (e["type"], e["state"], e["protocol"])
            for e in run.of("group") if e["groupId"] in OURS}


def _check_listing(bootstrap: str) -> None:
    classic = ("Classic", "Empty", "consumer")
    consumer = ("Consumer", "Empty", "consumer")
    share = ("Share", "Empty", "share")
    assert _listing(bootstrap) == {CLASSIC: classic, CONSUMER: consumer, SHARE: share}
    assert _listing(bootstrap, "--types", "share") == {SHARE: share}
    assert _listing(bootstrap, "--types", "classic") == {CLASSIC: classic}
    assert _listing(bootstrap, "--types", "consumer") == {CONSUMER: consumer}
    assert _listing(bootstrap, "--types", "classic,consumer") == {CLASSIC: classic,
                                                                  CONSUMER: consumer}
    assert _listing(bootstrap, "--types", "share", "--states", "Empty") == {SHARE: share}
    assert _listing(bootstrap, "--types", "share", "--states", "Stable") == {}
    assert _listing(bootstrap, "--states", "Empty") == {CLASSIC: classic, CONSUMER: consumer,
                                                        SHARE: share}


def _check_descriptions(bootstrap: str) -> None:
    run = harness("describe-groups", bootstrap, "--groups", f"{CLASSIC},{CONSUMER}")
    described = {e["groupId"]: (e["type"], e["state"], e["members"]) for e in run.of("described")}
    assert described == {CLASSIC: ("Classic", "Empty", []), CONSUMER: ("Consumer", "Empty", [])}
    run = harness("describe-share-groups", bootstrap, "--groups", f"{SHARE},adm4-never")
    shared = {e["groupId"]: e for e in run.of("share-described")}
    assert (shared[SHARE]["state"], shared[SHARE]["members"]) == ("Empty", [])
    assert shared["adm4-never"]["error"] == "GroupIdNotFoundException"


def _check_share_offsets(bootstrap: str) -> None:
    ends = {p: sum(1 for i in SHARE_IDS if i % SHARE_PARTITIONS == p)
            for p in range(SHARE_PARTITIONS)}
    # Every record is done: no lag. The start offsets themselves are not compared: Kafka
    # reports the one written before the last acknowledgement moved it (the strict xfail
    # test_conformance_share_groups.py::test_start_offset_after_accepting_everything).
    assert {p: lag for p, (_, lag) in _share_offsets(bootstrap).items()} == {0: 0, 1: 0}
    altered = harness("alter-share-group-offsets", bootstrap, "--group", SHARE,
                      "--topic", "adm4-sq", "--offsets", "0:4").of("share-offset-altered")
    assert [(e["partition"], e["error"]) for e in altered] == [(0, None)]
    offsets = _share_offsets(bootstrap)
    assert offsets[0] == (4, ends[0] - 4) and offsets[1][1] == 0, offsets
    deleted = harness("delete-share-group-offsets", bootstrap, "--group", SHARE,
                      "--topics", "adm4-sq").of("share-offsets-deleted")
    assert [(e["topic"], e["error"]) for e in deleted] == [("adm4-sq", None)]
    assert _share_offsets(bootstrap) == {}


def _check_deletes(bootstrap: str) -> None:
    run = harness("delete-share-groups", bootstrap, "--groups", SHARE)
    assert [(e["groupId"], e["error"]) for e in run.of("group-deleted")] == [(SHARE, None)]
    run = harness("delete-groups", bootstrap, "--groups", f"{CLASSIC},{CONSUMER}")
    assert {e["groupId"]: e["error"] for e in run.of("group-deleted")} == {CLASSIC: None,
                                                                           CONSUMER: None}
    assert _listing(bootstrap) == {}
    [gone] = harness("describe-share-groups", bootstrap, "--groups", SHARE).of("share-described")
    assert gone["error"] == "GroupIdNotFoundException"
