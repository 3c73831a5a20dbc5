"""`groupcoord groups` against a real broker with a real confluent-kafka consumer group."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
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


def kafka_style(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A `kafka-consumer-groups.sh` command line: the action an option, the broker last."""
    cmd = [sys.executable, "-m", "groupcoord", "groups", *args, "--bootstrap-server", bootstrap]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)


def test_kafka_style_describe_state_names_the_coordinator(live_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = live_group
    result = kafka_style(bootstrap, "--describe", "--group", GROUP, "--state")
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()
    assert header.split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE",
                              "#MEMBERS"]
    # `HOST:PORT  (ID)`, two spaces, as Kafka's printStates writes it.
    assert f" {bootstrap}  (0) " in row
    assert row.split()[-3:] == ["range", "Stable", "1"]


def test_kafka_style_describe_views_and_all_groups(live_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = live_group
    offsets = kafka_style(bootstrap, "--describe", "--group", GROUP, "--offsets")
    assert offsets.returncode == 0, offsets.stderr
    assert offsets.stdout == groups(bootstrap, "describe", GROUP).stdout
    assert [line.split()[:4] for line in offsets.stdout.splitlines()[1:]] == [
        [GROUP, TOPIC, str(p), "10"] for p in range(3)]
    members = kafka_style(bootstrap, "--describe", "--all-groups", "--members", "--verbose")
    assert members.returncode == 0, members.stderr
    header, row = members.stdout.splitlines()
    assert header.split()[:2] == ["GROUP", "CONSUMER-ID"]
    assert row.split()[0] == GROUP and row.split()[-1] == "3"
    listed = kafka_style(bootstrap, "--list")
    assert listed.stdout.split() == [GROUP]


def test_an_unknown_group_is_answered_as_kafka_does(live_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = live_group
    kafka_words = ("Error: Executing consumer group command failed due to "
                   "org.apache.kafka.common.errors.GroupIdNotFoundException: "
                   "Group no-such-group not found.\n")
    for view in ("--state", "--members", "--offsets"):
        result = kafka_style(bootstrap, "--describe", "--group", "no-such-group", view)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", kafka_words)
    result = groups(bootstrap, "offsets", "no-such-group")
    assert (result.returncode, result.stderr) == (1, kafka_words)


def test_a_kafka_style_command_line_missing_its_group(live_group) -> None:  # type: ignore[no-untyped-def]
    bootstrap, _ = live_group
    result = kafka_style(bootstrap, "--describe")
    assert (result.returncode, result.stderr) == (
        2, ("groupcoord groups: Option [describe] takes one of these options: --all-groups, "
           "--group\n"))
    result = kafka_style(bootstrap, "--describe", "--list")
    assert result.returncode == 2 and "exactly one action" in result.stderr


def test_assignments_are_shown_as_kafka_shows_them() -> None:
    from groupcoord.cli.groups import _partition_list

    assert _partition_list([("orders", 2), ("audit", 1), ("orders", 0), ("orders", 1)]) == (
        "audit:1;orders:0,1,2")
    assert _partition_list([]) == "-"


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


def test_reset_offsets_of_all_groups_as_kafka_does(live_group) -> None:  # type: ignore[no-untyped-def]
    """--all-groups resets every inactive group, dry-run unless --execute; the active
    group is refused with Kafka's words and left as it is. --describe --json of several
    groups is one JSON list."""
    bootstrap, _ = live_group
    committed = {"idle-a": {0: 5, 1: 5, 2: 5}, "idle-b": {0: 7}}
    for group, offsets in committed.items():
        simple = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "enable.auto.commit": False})
        simple.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()],
                      asynchronous=False)
        simple.close()

    def current(group: str) -> dict[int, int]:
        got = json.loads(groups(bootstrap, "offsets", group, "--json").stdout)
        return {r["partition"]: r["current_offset"] for r in got["partitions"]}

    refused = ("Error: Assignments can only be reset if the group 'cli-group' is inactive, "
               "but the current state is Stable.")
    dry = kafka_style(bootstrap, "--reset-offsets", "--all-groups", "--all-topics",
                      "--to-earliest")
    assert dry.returncode == 1 and refused in dry.stderr.splitlines()
    assert "WARN: No action will be performed" in dry.stderr
    assert [line.split() for line in dry.stdout.splitlines()] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
        *[["idle-a", TOPIC, str(p), "0"] for p in range(3)], ["idle-b", TOPIC, "0", "0"]]
    assert {g: current(g) for g in committed} == committed
    export = kafka_style(bootstrap, "--reset-offsets", "--all-groups", "--all-topics",
                         "--shift-by", "-2", "--export", "--dry-run")
    assert export.stdout == (f"idle-a,{TOPIC},0,3\nidle-a,{TOPIC},1,3\nidle-a,{TOPIC},2,3\n"
                             f"idle-b,{TOPIC},0,5\n")
    done = kafka_style(bootstrap, "--reset-offsets", "--all-groups", "--all-topics",
                       "--to-earliest", "--execute", "--json")
    assert done.returncode == 1 and done.stderr == refused + "\n"
    assert len(json.loads(done.stdout)) == 4
    assert current("idle-a") == {0: 0, 1: 0, 2: 0} and current("idle-b") == {0: 0}
    assert current(GROUP) == {0: 10, 1: 10, 2: 10}
    # --json with several groups: one document, a list of the groups' own.
    described = kafka_style(bootstrap, "--describe", "--all-groups", "--json")
    assert described.returncode == 0, described.stderr
    assert [(d["group"], d["state"], len(d["partitions"]))
            for d in json.loads(described.stdout)] == [
        (GROUP, "Stable", 3), ("idle-a", "Empty", 3), ("idle-b", "Empty", 1)]
    states = kafka_style(bootstrap, "--describe", "--group", "idle-a", "--group", "idle-b",
                         "--state", "--json")
    assert [d["group"] for d in json.loads(states.stdout)] == ["idle-a", "idle-b"]
    assert groups(bootstrap, "delete", "idle-a", "idle-b").returncode == 0


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
