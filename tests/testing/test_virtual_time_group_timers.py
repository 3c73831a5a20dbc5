"""Virtual time for the group timers besides the session: the initial rebalance delay, the
rebalance timeout and offsets retention fire when the test advances the broker's clock, at
their deadline and not a millisecond before, with no wall-clock wait.

Raw requests over one connection each (`send` now, `receive` after the clock moved), so a
parked JoinGroup is seen parked: its group is PreparingRebalance with the timer armed.
"""

from __future__ import annotations

import time

from helpers.wire_client import WireConnection

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.testing import KafkaBroker
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.create_topics import CreatableTopic, CreateTopicsRequest
from groupcoord.wire.generated.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.wire.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from groupcoord.wire.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment

JOIN_VERSION = 9  # MEMBER_ID_REQUIRED first, then the join with the id (KIP-394)
WALL_BUDGET_S = 2.0


def _connect(broker: KafkaBroker) -> WireConnection:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return WireConnection(host, int(port), client_id="vt-timers")


def _join_request(group: str, member_id: str, session_ms: int,
                  rebalance_ms: int) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms,
        member_id=member_id, protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")])


def _member_id(conn: WireConnection, group: str, session_ms: int, rebalance_ms: int) -> str:
    first = conn.call(_join_request(group, "", session_ms, rebalance_ms), JOIN_VERSION)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    return str(first.member_id)


def _parked(broker: KafkaBroker, group: str) -> None:
    """Until the JoinGroup just sent has reached the coordinator (each look is a round trip
    to the broker's loop, no sleep); the clock does not move meanwhile."""
    deadline = time.monotonic() + WALL_BUDGET_S
    while broker.describe_group(group)["state"] != "PreparingRebalance":
        assert time.monotonic() < deadline, broker.describe_group(group)


def _create_topic(conn: WireConnection, topic: str) -> None:
    created = conn.call(CreateTopicsRequest(topics=[CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1)], timeout_ms=5000), 4)
    assert created.topics[0].error_code == 0


def _timers(broker: KafkaBroker, group: str, kind: str) -> list[int]:
    return [t["deadline_ms"] for t in broker.describe_group(group)["timers"] if t["kind"] == kind]


def test_the_initial_rebalance_delay_ends_when_virtual_time_reaches_it() -> None:
    delay_ms = 3_000
    with KafkaBroker(clock="manual", group_initial_rebalance_delay_ms=delay_ms) as broker:
        assert broker.clock is not None
        conn = _connect(broker)
        member = _member_id(conn, "vt-delay", 45_000, 60_000)
        start_ms = broker.clock.now_ms()
        started = time.monotonic()
        pending = conn.send(_join_request("vt-delay", member, 45_000, 60_000), JOIN_VERSION)
        _parked(broker, "vt-delay")
        assert _timers(broker, "vt-delay", "join") == [start_ms + delay_ms]
        broker.advance(delay_ms - 1)
        assert broker.describe_group("vt-delay")["state"] == "PreparingRebalance"
        broker.advance(1)
        joined = conn.receive(pending)
        assert isinstance(joined, JoinGroupResponse)
        assert (joined.error_code, joined.generation_id, joined.leader) == (0, 1, member)
        assert broker.describe_group("vt-delay")["state"] == "CompletingRebalance"
        assert time.monotonic() - started < WALL_BUDGET_S
        conn.close()


def test_a_member_that_does_not_rejoin_is_removed_at_the_rebalance_timeout() -> None:
    rebalance_ms, session_ms = 60_000, 300_000  # the session outlives the rebalance
    with KafkaBroker(clock="manual") as broker:
        assert broker.clock is not None
        first, second = _connect(broker), _connect(broker)
        old = _member_id(first, "vt-rebalance", session_ms, rebalance_ms)
        joined = first.call(_join_request("vt-rebalance", old, session_ms, rebalance_ms),
                            JOIN_VERSION)
        assert joined.error_code == 0
        synced = first.call(SyncGroupRequest(
            group_id="vt-rebalance", generation_id=joined.generation_id, member_id=old,
            protocol_type="consumer", protocol_name="range", assignments=[SyncGroupRequestAssignment(member_id=old, assignment=b"a")]), 5)
        assert synced.error_code == 0
        assert broker.describe_group("vt-rebalance")["state"] == "Stable"

        # A newcomer starts a rebalance; the old member never rejoins (it stopped polling).
        new = _member_id(second, "vt-rebalance", session_ms, rebalance_ms)
        start_ms = broker.clock.now_ms()
        started = time.monotonic()
        pending = second.send(_join_request("vt-rebalance", new, session_ms, rebalance_ms),
                              JOIN_VERSION)
        _parked(broker, "vt-rebalance")
        assert _timers(broker, "vt-rebalance", "join") == [start_ms + rebalance_ms]
        broker.advance(rebalance_ms - 1)
        members = {m["member_id"] for m in broker.describe_group("vt-rebalance")["members"]}
        assert members == {old, new}
        broker.advance(1)
        rejoined = second.receive(pending)
        assert isinstance(rejoined, JoinGroupResponse)
        assert rejoined.error_code == 0 and rejoined.generation_id == 2
        assert [m.member_id for m in rejoined.members] == [new]  # the old member is gone
        assert time.monotonic() - started < WALL_BUDGET_S
        first.close()
        second.close()


def test_offsets_of_an_empty_group_expire_after_the_retention_period() -> None:
    config = GroupCoordinatorConfig()
    retention_ms = config.offsets_retention_ms  # Kafka's default: 7 days
    check_ms = config.offsets_retention_check_interval_ms
    with KafkaBroker(clock="manual") as broker:
        assert broker.clock is not None
        conn = _connect(broker)
        _create_topic(conn, "vt-retained")
        topic = OffsetCommitRequestTopic(name="vt-retained", partitions=[
            OffsetCommitRequestPartition(partition_index=0, committed_offset=42)])
        committed = conn.call(OffsetCommitRequest(
            group_id="vt-retention", generation_id_or_member_epoch=-1, member_id="",
            topics=[topic]), 7)
        assert committed.topics[0].partitions[0].error_code == 0

        def fetched() -> int:
            answer = conn.call(OffsetFetchRequest(group_id="vt-retention", topics=[
                OffsetFetchRequestTopic(name="vt-retained", partition_indexes=[0])]), 7)
            return int(answer.topics[0].partitions[0].committed_offset)

        started = time.monotonic()
        # The expiry check runs every `check_ms`; the last one before the retention period
        # has passed keeps the offset, the first one after it removes it.
        broker.advance(retention_ms - check_ms)
        assert fetched() == 42
        broker.advance(2 * check_ms)
        assert fetched() == -1
        assert broker.describe_group("vt-retention")["offsets"] == {}
        assert time.monotonic() - started < WALL_BUDGET_S
        conn.close()
