"""`groupcoord groups` against a real broker with a real confluent-kafka consumer group."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.timeout(120)

TOPIC = "cli-orders"
GROUP = "cli-group"


def groups(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "groupcoord", "groups", "--bootstrap-server", bootstrap, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)


@pytest.fixture(scope="module")
def live_group(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from helpers.broker import BrokerFactory

    factory = BrokerFactory(tmp_path_factory.mktemp("cli"))
    try:
        yield from _run_group(factory)
    finally:
        factory.close()


def _run_group(factory):  # type: ignore[no-untyped-def]
    broker = factory.create(["--group-initial-rebalance-delay-ms", "0"])
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 3, 1)])[TOPIC].result(10)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        producer.produce(TOPIC, key=str(i).encode(), value=b"x", partition=i % 3)
    producer.flush(10)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    seen, deadline = 0, time.monotonic() + 30
    while seen < 30 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    assert seen == 30
    consumer.commit(asynchronous=False)
    try:
        yield bootstrap, consumer
    finally:
        consumer.close()


def test_describe_shows_offsets_lag_and_owner(live_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = live_group
    result = groups(bootstrap, "describe", GROUP, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["state"] == "Stable"
    rows = {r["partition"]: r for r in data["partitions"]}
    assert sorted(rows) == [0, 1, 2]
    for row in rows.values():
        assert (row["current_offset"], row["log_end_offset"], row["lag"]) == (10, 10, 0)
        assert row["consumer_id"].startswith("rdkafka-")
    table = groups(bootstrap, "describe", GROUP)
    assert table.stdout.splitlines()[0].split() == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID"]


def test_list_with_state_filter(live_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = live_group
    stable = groups(bootstrap, "list", "--state", "stable")
    assert stable.stdout.split() == ["GROUP", "STATE", GROUP, "Stable"]
    empty = groups(bootstrap, "list", "--state", "Empty", "--json")
    assert json.loads(empty.stdout) == []


def test_delete_live_group_is_refused(live_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = live_group
    result = groups(bootstrap, "delete", GROUP)
    assert result.returncode == 1
    assert "NON_EMPTY_GROUP" in result.stdout


def test_reset_offsets_refused_while_active(live_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = live_group
    result = groups(bootstrap, "reset-offsets", GROUP, "--all-topics", "--to-earliest",
                    "--execute")
    assert result.returncode != 0
    assert "inactive" in result.stderr


def test_reset_then_delete_after_members_leave(live_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, consumer = live_group
    consumer.close()
    dry = groups(bootstrap, "reset-offsets", GROUP, "--topic", f"{TOPIC}:1", "--shift-by", "-4",
                 "--json")
    assert json.loads(dry.stdout) == [
        {"group": GROUP, "topic": TOPIC, "partition": 1, "new_offset": 6}]
    offsets = json.loads(groups(bootstrap, "offsets", GROUP, "--json").stdout)
    assert {r["partition"]: r["current_offset"] for r in offsets["partitions"]} == {
        0: 10, 1: 10, 2: 10}
    done = groups(bootstrap, "reset-offsets", GROUP, "--all-topics", "--to-earliest",
                  "--execute")
    assert done.returncode == 0, done.stderr
    offsets = json.loads(groups(bootstrap, "offsets", GROUP, "--json").stdout)
    assert offsets["state"] == "Empty"
    assert {r["partition"]: r["lag"] for r in offsets["partitions"]} == {0: 10, 1: 10, 2: 10}
    deleted = groups(bootstrap, "delete", GROUP)
    assert deleted.returncode == 0
    assert f"('{GROUP}') was successful" in deleted.stdout
    assert json.loads(groups(bootstrap, "list", "--json").stdout) == []
