"""`groupcoord groups` on a share group, against a broker subprocess and a real
confluent-kafka `ShareConsumer` that acknowledges some records and holds the rest.

The consumer uses explicit acknowledgement, so it cannot poll again while it holds
unacknowledged records: what it acquired stays acquired (the lock is 60 s) and records
produced afterwards stay unacquired, which makes the counts exact.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest
from helpers.polling import wait_for

from groupcoord.cli.share_group_ops import InFlight, count_in_flight
from groupcoord.wire.generated.read_share_group_state import StateBatch

pytestmark = pytest.mark.timeout(120)

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

TOPIC = "cli-share-orders"
GROUP = "cli-share-group"
# Per partition, what the consumer does with each offset of the first ten records;
# anything not listed stays acquired.
ACKS = {0: {0: "ACCEPT", 1: "ACCEPT", 2: "ACCEPT", 3: "ACCEPT", 6: "REJECT", 7: "RELEASE"},
        1: {0: "ACCEPT", 1: "ACCEPT"}}
# Partition 0: start 4 (0-3 accepted); 4, 5, 8, 9 acquired, 6 archived, 7 available again.
# Partition 1: start 2; 2-9 acquired; 5 more records produced later, never acquired.
EXPECTED = {0: {"start_offset": 4, "lag": 5, "in_flight": 5, "acquired": 4},
            1: {"start_offset": 2, "lag": 13, "in_flight": 8, "acquired": 8}}


def groups(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "groupcoord", "groups", "--bootstrap-server", bootstrap, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)


def groups_json(bootstrap: str, *args: str) -> Any:
    result = groups(bootstrap, *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def share_group(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from helpers.broker import BrokerFactory

    factory = BrokerFactory(tmp_path_factory.mktemp("cli-share"))
    try:
        yield from _run_share_group(factory)
    finally:
        factory.close()


def _setup(bootstrap: str) -> None:
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([admin_mod.NewTopic(TOPIC, 2, 1)])[TOPIC].result(10)
    # Group configs may be set before the group exists (a GROUP resource).
    entries = [admin_mod.ConfigEntry(name, value,
                                     incremental_operation=admin_mod.AlterConfigOpType.SET)
               for name, value in (("share.auto.offset.reset", "earliest"),
                                   ("share.record.lock.duration.ms", "60000"))]
    resource = admin_mod.ConfigResource(admin_mod.ResourceType.GROUP, GROUP,
                                        incremental_configs=entries)
    for fut in admin.incremental_alter_configs([resource]).values():
        fut.result(10)


def _produce(bootstrap: str, partitions: dict[int, int]) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for partition, count in partitions.items():
        for i in range(count):
            producer.produce(TOPIC, str(i).encode(), partition=partition)
    assert producer.flush(10) == 0


def _run_share_group(factory):  # type: ignore[no-untyped-def]
    bootstrap = factory.create().bootstrap
    _setup(bootstrap)
    _produce(bootstrap, {0: 10, 1: 10})
    consumer = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                                 "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([TOPIC])
    received: list[Any] = []
    deadline = time.monotonic() + 30
    while len(received) < 20 and time.monotonic() < deadline:
        received.extend(m for m in consumer.poll(0.5) if m.error() is None)
    assert len(received) == 20
    for msg in received:
        kind = ACKS[msg.partition()].get(msg.offset())
        if kind is not None:
            consumer.acknowledge(msg, getattr(ck.AcknowledgeType, kind))
    results = consumer.commit_sync(30)
    assert all(err is None for err in results.values()), results
    _produce(bootstrap, {1: 5})
    try:
        yield bootstrap, consumer
    finally:
        try:
            consumer.close()
        except RuntimeError:
            pass  # the last test closed it already


def test_count_in_flight_definition() -> None:
    batches = [StateBatch(first_offset=0, last_offset=3, delivery_state=2, delivery_count=1),
               StateBatch(first_offset=4, last_offset=5, delivery_state=1, delivery_count=1),
               StateBatch(first_offset=6, last_offset=6, delivery_state=4, delivery_count=1),
               StateBatch(first_offset=7, last_offset=7, delivery_state=0, delivery_count=1),
               StateBatch(first_offset=9, last_offset=9, delivery_state=1, delivery_count=2)]
    # Start 4: 0-3 lie below it; 6 is archived; 8 has no batch and counts as in flight.
    assert count_in_flight(4, batches) == InFlight(in_flight=5, acquired=3)
    assert count_in_flight(10, []) == InFlight(in_flight=0, acquired=0)


def test_describe_json_shows_start_offset_lag_and_in_flight(share_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = share_group
    data = groups_json(bootstrap, "describe", GROUP)
    assert (data["group"], data["type"], data["state"]) == (GROUP, "share", "Stable")
    rows = {r["partition"]: r for r in data["partitions"]}
    assert sorted(rows) == [0, 1]
    for partition, expected in EXPECTED.items():
        row = rows[partition]
        assert (row["group"], row["topic"]) == (GROUP, TOPIC)
        assert {k: row[k] for k in expected} == expected, row
    assert groups_json(bootstrap, "offsets", GROUP) == data


def test_describe_table_has_share_columns(share_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = share_group
    for command in ("describe", "offsets"):
        result = groups(bootstrap, command, GROUP)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG",
                                    "IN-FLIGHT"]
        assert [line.split() for line in lines[1:]] == [
            [GROUP, TOPIC, "0", "4", "5", "5"], [GROUP, TOPIC, "1", "2", "13", "8"]]


def test_members_and_state(share_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = share_group
    members = groups_json(bootstrap, "describe", GROUP, "--members")["members"]
    assert len(members) == 1
    assert members[0]["client_id"] == "rdkafka"
    assert members[0]["assignment"] == [[TOPIC, 0], [TOPIC, 1]]
    table = groups(bootstrap, "describe", GROUP, "--members").stdout.splitlines()
    assert table[0].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                "MEMBER-EPOCH", "ASSIGNMENT"]
    assert table[1].split()[-1] == f"{TOPIC}:0,1"
    state = groups_json(bootstrap, "describe", GROUP, "--state")
    assert (state["state"], state["members"], state["assignment_strategy"]) == (
        "Stable", 1, "simple")


def test_list_shows_share_type(share_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = share_group
    listed = groups(bootstrap, "list", "--type", "share")
    assert listed.stdout.split() == ["GROUP", "TYPE", GROUP, "share"]
    assert groups_json(bootstrap, "list", "--type", "consumer") == []


def test_reset_and_delete_offsets_refused_while_the_group_has_members(share_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _consumer = share_group
    reset = groups(bootstrap, "reset-offsets", GROUP, "--topic", TOPIC, "--to-earliest",
                   "--execute")
    assert reset.returncode == 1
    assert f"Share group '{GROUP}' is not empty." in reset.stderr
    delete = groups(bootstrap, "delete-offsets", GROUP, "--topic", TOPIC)
    assert delete.returncode == 1 and "NON_EMPTY_GROUP" in delete.stderr
    # Nothing changed.
    data = groups_json(bootstrap, "describe", GROUP)
    assert {r["partition"]: r["start_offset"] for r in data["partitions"]} == {0: 4, 1: 2}


def test_closed_consumer_releases_acquired_records(share_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, consumer = share_group
    consumer.close()
    seen: list[dict] = []

    def released() -> bool:
        seen.append(data := groups_json(bootstrap, "describe", GROUP))
        return data["state"] == "Empty" and all(r["acquired"] == 0 for r in data["partitions"])

    wait_for(released, "the acquired records to be released", 20, lambda: str(seen[-1]),
             interval=0.2)
    data = seen[-1]
    # Released records are available again but still in flight; nothing moved.
    assert {r["partition"]: (r["start_offset"], r["lag"], r["in_flight"])
            for r in data["partitions"]} == {0: (4, 5, 5), 1: (2, 13, 8)}
    table = groups(bootstrap, "describe", GROUP).stdout
    assert f"Share group '{GROUP}' has no active members." in table


def test_reset_offsets_of_an_empty_share_group(share_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _consumer = share_group  # closed by the test above: the group is Empty
    dry = groups_json(bootstrap, "reset-offsets", GROUP, "--all-topics", "--to-latest",
                      "--dry-run")
    assert [(r["topic"], r["partition"], r["new_offset"]) for r in dry] == \
        [(TOPIC, 0, 10), (TOPIC, 1, 15)]
    unchanged = groups_json(bootstrap, "describe", GROUP)
    assert {r["partition"]: r["start_offset"] for r in unchanged["partitions"]} == {0: 4, 1: 2}
    wrong = groups(bootstrap, "reset-offsets", GROUP, "--topic", TOPIC, "--shift-by", "3",
                   "--execute")
    assert wrong.returncode == 1 and "cannot be reset --shift-by" in wrong.stderr
    done = groups(bootstrap, "reset-offsets", GROUP, "--topic", f"{TOPIC}:0", "--to-latest",
                  "--execute")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET",
                                   GROUP, TOPIC, "0", "10"]
    data = groups_json(bootstrap, "describe", GROUP)
    assert {r["partition"]: (r["start_offset"], r["lag"]) for r in data["partitions"]} == \
        {0: (10, 0), 1: (2, 13)}


def test_delete_offsets_of_an_empty_share_group(share_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _consumer = share_group
    partial = groups(bootstrap, "delete-offsets", GROUP, "--topic", f"{TOPIC}:0")
    assert partial.returncode == 1 and "per topic" in partial.stderr
    done = groups(bootstrap, "delete-offsets", GROUP, "--topic", TOPIC, "--topic", "no-such")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["TOPIC", "STATUS"]
    assert lines[1].split()[0] == "cli-share-orders" and lines[1].split()[1:] == ["Successful"]
    assert lines[2].startswith("no-such") and "Error:" in lines[2]
    # The topic's share state is gone: nothing left to describe or to delete again.
    assert groups_json(bootstrap, "describe", GROUP)["partitions"] == []
    again = groups(bootstrap, "delete-offsets", GROUP, "--topic", TOPIC, "--json")
    assert again.returncode == 1
    assert json.loads(again.stdout) == [{
        "topic": TOPIC, "error": "UNKNOWN_TOPIC_OR_PARTITION",
        "status": "Error: There is no offset information to delete."}]
