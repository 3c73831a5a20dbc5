"""Virtual time with real clients: a member with a 45 s session timeout that stopped
heartbeating (SIGKILLed, so no LeaveGroup) is evicted and the group rebalances onto the
survivor in well under 2 s of wall time.

Only the broker's clock is virtual. The survivor keeps heartbeating on real time, so its own
session (300 s) is longer than the jump; it hears of the rebalance at its next heartbeat
(200 ms) and takes over every partition. Both members are the same client, each in its own
process (`vt_member.py`, or the Java harness's `group-members` mode), so every client is
tested the same way.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.java import harness_command
from helpers.polling import wait_for
from helpers.wire_client import WireConnection

from groupcoord.testing import KafkaBroker
from groupcoord.wire.generated.create_topics import CreatableTopic, CreateTopicsRequest
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest

pytestmark = pytest.mark.interop

MEMBER_SCRIPT = Path(__file__).with_name("vt_member.py")
PARTITIONS = 2
VICTIM_SESSION_MS = 45_000
SURVIVOR_SESSION_MS = 300_000
HEARTBEAT_MS = 200
SETUP_TIMEOUT_S = 60.0
WALL_BUDGET_S = 2.0


def member_command(client: str, bootstrap: str, topic: str, group: str,
                   session_ms: int, protocol: str) -> list[str]:
    if client == "java" and protocol == "consumer":
        return [*harness_command("group-members"), "--bootstrap", bootstrap, "--topic", topic,
                "--group", group, "--group-protocol", "consumer"]
    if client == "java":
        return [*harness_command("group-members"), "--bootstrap", bootstrap, "--topic", topic,
                "--group", group, "--assignor", "range",
                "--prop", f"session.timeout.ms={session_ms}",
                "--prop", f"heartbeat.interval.ms={HEARTBEAT_MS}"]
    return [sys.executable, str(MEMBER_SCRIPT), client, bootstrap, topic, group,
            str(session_ms), str(HEARTBEAT_MS), protocol]


class Member:
    """One member process and the partitions it last reported owning: `vt_member.py`
    lines (`parts`), or the Java harness's `group-members` events (classic: eager `range`,
    so an `assigned` event is the whole new assignment; consumer protocol: incremental)."""

    def __init__(self, client: str, bootstrap: str, topic: str, group: str,
                 session_ms: int, protocol: str = "classic") -> None:
        self.name = (f"{client} consumer-protocol member" if protocol == "consumer"
                     else f"{client} member (session {session_ms} ms)")
        self.incremental = protocol == "consumer"
        self.proc = subprocess.Popen(
            member_command(client, bootstrap, topic, group, session_ms, protocol),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        if client == "java":
            assert self.proc.stdin is not None
            self.proc.stdin.write("start 0\n")
            self.proc.stdin.flush()
        self.parts: list[int] = []
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def wait_for(self, parts: list[int] | int, timeout: float) -> None:
        """Until the member owns `parts` (a list), or that many partitions (an int)."""
        def done() -> bool:
            return len(self.parts) == parts if isinstance(parts, int) else self.parts == parts
        deadline = time.monotonic() + timeout
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{self.name} owns {self.parts} after {timeout} s, "
                                     f"expected {parts}")
            try:
                self._apply(json.loads(self._lines.get(timeout=remaining)))
            except queue.Empty:
                continue

    def _apply(self, event: dict[str, Any]) -> None:
        if "ev" not in event:
            self.parts = event["parts"]
        elif event["ev"] == "assigned":
            base = self.parts if self.incremental else []
            self.parts = sorted(set(base) | set(event["parts"]))
        elif event["ev"] in ("revoked", "lost"):
            self.parts = [p for p in self.parts if p not in event["parts"]]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _wire(broker: KafkaBroker) -> WireConnection:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return WireConnection(host, int(port), client_id="vt-test")


def _members(conn: WireConnection, group: str) -> int:
    return len(conn.call(DescribeGroupsRequest(groups=[group]), 3).groups[0].members)


@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka", "java"])
def test_a_dead_member_is_evicted_after_45_virtual_seconds(
        client: str, unique_topic: str, unique_group: str) -> None:
    with KafkaBroker(clock="manual") as broker:
        conn = _wire(broker)
        created = conn.call(CreateTopicsRequest(topics=[CreatableTopic(
            name=unique_topic, num_partitions=PARTITIONS, replication_factor=1)],
            timeout_ms=5000), 4)
        assert created.topics[0].error_code == 0
        victim = Member(client, broker.bootstrap_servers, unique_topic, unique_group,
                        VICTIM_SESSION_MS)
        survivor = None
        try:
            victim.wait_for([0, 1], SETUP_TIMEOUT_S)
            survivor = Member(client, broker.bootstrap_servers, unique_topic, unique_group,
                              SURVIVOR_SESSION_MS)
            survivor.wait_for(1, SETUP_TIMEOUT_S)  # one partition each
            victim.wait_for([p for p in range(PARTITIONS) if p not in survivor.parts],
                            SETUP_TIMEOUT_S)
            victim.kill()

            started = time.monotonic()
            broker.advance(VICTIM_SESSION_MS - 1000)
            assert _members(conn, unique_group) == 2  # not yet: the session has 1 s left
            broker.advance(1000)
            survivor.wait_for([0, 1], WALL_BUDGET_S)
            elapsed = time.monotonic() - started
            assert _members(conn, unique_group) == 1
            assert elapsed < WALL_BUDGET_S
            print(f"{client}: evicted and rebalanced in {elapsed * 1000:.0f} ms of wall time")
        finally:
            victim.kill()
            if survivor is not None:
                survivor.kill()
            conn.close()


# KIP-848: the session timeout is the broker's (group.consumer.session.timeout.ms, 45 s for
# every member), so a single 45 s jump would expire the survivor too. The test jumps 30 s,
# waits for the survivor's next heartbeat (it renews its session to 30 + 45 s), then jumps
# the remaining 15 s, which only the silent member's session does not outlive.
CONSUMER_SESSION_MS = 45_000
FIRST_JUMP_MS = 30_000


def _wait_for_deadline(broker: KafkaBroker, deadline_ms: int, timeout: float) -> None:
    assert broker.clock is not None
    clock = broker.clock
    # The broker runs on its own thread: its timers appear there, not on ours.
    wait_for(lambda: deadline_ms in clock.pending(), f"a timer at {deadline_ms}", timeout,
             interval=0.01)


@pytest.mark.parametrize("client", ["confluent", "java"])
def test_a_dead_consumer_protocol_member_is_evicted_after_45_virtual_seconds(
        client: str, unique_topic: str, unique_group: str) -> None:
    # Virtual time stands still between jumps: without an assignment interval the survivor's
    # join is assigned without one.
    group_config = {"group.consumer.min.heartbeat.interval.ms": str(HEARTBEAT_MS),
                    "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
                    "group.consumer.assignment.interval.ms": "0"}
    with KafkaBroker(clock="manual", group_config=group_config) as broker:
        assert broker.clock is not None
        conn = _wire(broker)
        created = conn.call(CreateTopicsRequest(topics=[CreatableTopic(
            name=unique_topic, num_partitions=PARTITIONS, replication_factor=1)],
            timeout_ms=5000), 4)
        assert created.topics[0].error_code == 0
        victim = Member(client, broker.bootstrap_servers, unique_topic, unique_group, 0,
                        "consumer")
        survivor = None
        try:
            victim.wait_for([0, 1], SETUP_TIMEOUT_S)
            survivor = Member(client, broker.bootstrap_servers, unique_topic, unique_group, 0,
                              "consumer")
            survivor.wait_for(1, SETUP_TIMEOUT_S)
            victim.wait_for([p for p in range(PARTITIONS) if p not in survivor.parts],
                            SETUP_TIMEOUT_S)
            victim.kill()

            started = time.monotonic()
            start_ms = broker.clock.now_ms()
            broker.advance(FIRST_JUMP_MS)
            _wait_for_deadline(broker, start_ms + FIRST_JUMP_MS + CONSUMER_SESSION_MS,
                               WALL_BUDGET_S)
            assert survivor.parts != [0, 1]
            broker.advance(CONSUMER_SESSION_MS - FIRST_JUMP_MS)
            survivor.wait_for([0, 1], WALL_BUDGET_S)
            elapsed = time.monotonic() - started
            assert elapsed < WALL_BUDGET_S
            print(f"{client} (consumer protocol): evicted and reassigned in "
                  f"{elapsed * 1000:.0f} ms of wall time")
        finally:
            victim.kill()
            if survivor is not None:
                survivor.kill()
            conn.close()
