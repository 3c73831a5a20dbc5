"""Kafka 4.4's own `kafka-share-groups.sh` (ShareGroupCommand) initialising share groups'
offsets from a file (KIP-1323), against groupcoord and against Kafka 4.4 with the same
expectations, and `groupcoord groups` doing the same against both.

One scenario per broker: a topic with 10 records in each of two partitions; the tool's
`--reset-offsets --from-file` creates a share group that does not exist yet with the plan's
start offsets (one past the log end, which the tool moves to the end); `--describe` shows
them; `--export --to-current` writes them as a plan, which initialises a second group; and
`groupcoord groups reset-offsets --share --from-file` initialises a third one, which the tool
describes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from helpers import confluent_io
from helpers.broker import BrokerProcess
from helpers.kafka_tools import SHARE_GROUPS, run_tool
from helpers.reference_broker import ReferenceBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

TOPIC = "tool-plan"
NEW, COPY, OURS = "tool-new", "tool-copy", "tool-ours"
EXPECTED: dict[str, Any] = {
    "reset": [[NEW, TOPIC, "0", "3"], [NEW, TOPIC, "1", "10"]],
    "describe new": [[NEW, TOPIC, "0", "3", "7"], [NEW, TOPIC, "1", "10", "0"]],
    "export": [f"{TOPIC},0,3", f"{TOPIC},1,10"],
    "describe copy": [[COPY, TOPIC, "0", "3", "7"], [COPY, TOPIC, "1", "10", "0"]],
    "groupcoord reset": [[OURS, TOPIC, "0", "5"], [OURS, TOPIC, "1", "10"]],
    "describe ours": [[OURS, TOPIC, "0", "5", "5"], [OURS, TOPIC, "1", "10", "0"]],
}


def _tool(bootstrap: str, *args: str) -> str:
    done = run_tool(SHARE_GROUPS, "--bootstrap-server", bootstrap, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _rows(table: str) -> list[list[str]]:
    """The data rows of a table the tool (or `groupcoord groups`) printed, sorted."""
    lines = [line.split() for line in table.splitlines() if line.strip()]
    return sorted(row for row in lines if row[0] != "GROUP")


def run_scenario(bootstrap: str, tmp_path: Path) -> dict[str, Any]:
    confluent_io.create_topic(bootstrap, TOPIC, 2)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for partition in (0, 1):
        for i in range(10):
            producer.produce(TOPIC, f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0
    seen: dict[str, Any] = {}
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{TOPIC},0,3\n{TOPIC},1,99\n")
    seen["reset"] = _rows(_tool(bootstrap, "--reset-offsets", "--group", NEW,
                                "--from-file", str(plan), "--execute"))
    seen["describe new"] = _rows(_tool(bootstrap, "--describe", "--group", NEW))
    exported = _tool(bootstrap, "--reset-offsets", "--group", NEW, "--all-topics",
                     "--to-current", "--export", "--dry-run")
    seen["export"] = sorted(line for line in exported.splitlines() if line)
    copy_plan = tmp_path / "copy.csv"
    copy_plan.write_text(exported)
    _tool(bootstrap, "--reset-offsets", "--group", COPY, "--from-file", str(copy_plan),
          "--execute")
    seen["describe copy"] = _rows(_tool(bootstrap, "--describe", "--group", COPY))
    ours_plan = tmp_path / "ours.csv"
    ours_plan.write_text(f"{TOPIC},0,5\n{TOPIC},1,10\n")
    ours = subprocess.run(
        [sys.executable, "-m", "groupcoord", "groups", "--bootstrap-server", bootstrap,
         "reset-offsets", OURS, "--share", "--from-file", str(ours_plan), "--execute"],
        capture_output=True, text=True, timeout=60, check=False)
    assert ours.returncode == 0, ours.stderr
    seen["groupcoord reset"] = _rows(ours.stdout)
    seen["describe ours"] = _rows(_tool(bootstrap, "--describe", "--group", OURS))
    return seen


def test_kafka_share_groups_tool_initialises_offsets_from_a_file(
        broker: BrokerProcess, tmp_path: Path) -> None:
    assert run_scenario(broker.bootstrap, tmp_path) == EXPECTED


@pytest.mark.reference
def test_kafka_share_groups_tool_initialises_offsets_from_a_file_on_kafka(
        kafka: ReferenceBroker, tmp_path: Path) -> None:
    """The same expectations hold for Apache Kafka 4.4.0: they are Kafka's behaviour."""
    assert run_scenario(kafka.bootstrap, tmp_path) == EXPECTED
