"""`groupcoord groups describe` on share groups with a dead-letter queue (KIP-1191): dead
letters per share-partition and in total, ARCHIVING counts, against a broker subprocess and
a confluent-kafka `ShareConsumer` that rejects some records."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest
from helpers.confluent_io import create_share_topic, produce_ids
from helpers.polling import poll_until

from groupcoord.cli.share_group_ops import InFlight, count_in_flight
from groupcoord.wire.generated.read_share_group_state import StateBatch

pytestmark = pytest.mark.timeout(120)

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

TOPIC, GROUP, PLAIN, DLQ = "cli-dlq-src", "cli-dlq-g", "cli-dlq-plain", "dlq.cli"


def groups(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "groupcoord", "groups", "--bootstrap-server", bootstrap, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)


def consume(bootstrap: str, group: str, total: int) -> None:
    """Reject records 0, 3, 6, ... and accept the rest."""
    consumer = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                 "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([TOPIC])
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(seen) < total and time.monotonic() < deadline:
            for msg in consumer.poll(0.5):
                if msg.error() is None:
                    record_id = int(msg.value())
                    kind = "REJECT" if record_id % 3 == 0 else "ACCEPT"
                    consumer.acknowledge(msg, getattr(ck.AcknowledgeType, kind))
                    seen.add(record_id)
            consumer.commit_sync(30)
    finally:
        consumer.close()
    assert len(seen) == total


def test_describe_shows_dead_letters_per_share_group(broker: Any) -> None:
    bootstrap = broker.bootstrap
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    new = admin_mod.NewTopic(DLQ, 1, 1, config={"errors.deadletterqueue.group.enable": "true"})
    for fut in admin.create_topics([new]).values():
        fut.result(timeout=30)
    create_share_topic(bootstrap, TOPIC, GROUP, 2, {
        "share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": DLQ})
    produce_ids(bootstrap, TOPIC, range(12), 2)
    consume(bootstrap, GROUP, 12)
    # The DLQ write follows the acknowledgement; wait for all four (ids 0, 3, 6, 9).
    views: list[dict] = []

    def four_written() -> bool:
        described = groups(bootstrap, "describe", GROUP, "--json")
        assert described.returncode == 0, described.stderr
        views.append(json.loads(described.stdout))
        return bool(views[-1]["dead_letter_queue"]["records"] == 4)

    poll_until(four_written, 30, interval=0.2)
    view = views[-1]
    assert view["dead_letter_queue"] == {"topic": DLQ, "records": 4}
    per_partition = {r["partition"]: (r["dead_letters"], r["archiving"])
                     for r in view["partitions"]}
    # Partition p holds ids p, p+2, ...: 0 and 6 on partition 0, 3 and 9 on partition 1.
    assert per_partition == {0: (2, 0), 1: (2, 0)}
    table = groups(bootstrap, "describe", GROUP)
    assert table.returncode == 0, table.stderr
    assert "ARCHIVING" in table.stdout and "DLQ" in table.stdout
    assert f"Dead-letter topic '{DLQ}': 4 records of this group." in table.stdout

    # A share group without a DLQ topic shows none, and no DLQ columns.
    earliest = admin_mod.ConfigEntry("share.auto.offset.reset", "earliest",
                                     incremental_operation=admin_mod.AlterConfigOpType.SET)
    resource = admin_mod.ConfigResource(admin_mod.ResourceType.GROUP, PLAIN,
                                        incremental_configs=[earliest])
    for fut in admin.incremental_alter_configs([resource]).values():
        fut.result(timeout=30)
    consume(bootstrap, PLAIN, 12)
    plain = json.loads(groups(bootstrap, "describe", PLAIN, "--json").stdout)
    assert plain["dead_letter_queue"] is None
    assert all("dead_letters" not in r for r in plain["partitions"])
    assert "DLQ" not in groups(bootstrap, "describe", PLAIN).stdout


def test_count_in_flight_counts_archiving() -> None:
    batches = [StateBatch(first_offset=4, last_offset=5, delivery_state=3, delivery_count=1),
               StateBatch(first_offset=6, last_offset=6, delivery_state=4, delivery_count=1),
               StateBatch(first_offset=7, last_offset=8, delivery_state=1, delivery_count=2)]
    assert count_in_flight(4, batches) == InFlight(in_flight=4, acquired=2, archiving=2)
