"""Injected faults on the wire, seen by raw requests: an error answered in the API's own
response shape without running the handler, a dropped connection, a delayed response; the
group/topic filters and the count; what fired is recorded; bad rules are refused. Both
the in-process API and the HTTP control endpoint of a subprocess."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from helpers import confluent_io
from helpers.wire_client import WireConnection

from groupcoord.testing import KafkaBroker
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.find_coordinator import FindCoordinatorRequest
from groupcoord.wire.generated.heartbeat import HeartbeatRequest
from groupcoord.wire.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.wire.generated.metadata import MetadataRequest, MetadataRequestTopic
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.wire.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(offsets_partitions=1) as running:
        yield running


@pytest.fixture(autouse=True)
def no_rules_left(broker: KafkaBroker) -> Iterator[None]:
    yield
    broker.clear_injections()


def _connect(broker: KafkaBroker) -> WireConnection:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return WireConnection(host, int(port), client_id="fault-test")


def _join(conn: WireConnection, group: str, member_id: str = "") -> Any:
    return conn.call(JoinGroupRequest(
        group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000,
        member_id=member_id, protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")]), 3)


def _join_and_sync(conn: WireConnection, group: str) -> tuple[str, int]:
    join = _join(conn, group)
    assert join.error_code == 0, ErrorCode.of(join.error_code)
    sync = conn.call(SyncGroupRequest(
        group_id=group, generation_id=join.generation_id, member_id=join.member_id,
        assignments=[SyncGroupRequestAssignment(member_id=join.member_id, assignment=b"")]), 3)
    assert sync.error_code == 0
    return join.member_id, join.generation_id


def _heartbeat(conn: WireConnection, group: str, member: str, generation: int) -> int:
    return int(conn.call(HeartbeatRequest(group_id=group, generation_id=generation,
                                          member_id=member), 3).error_code)


def test_an_injected_error_answers_the_next_n_requests_then_stops(broker: KafkaBroker) -> None:
    conn = _connect(broker)
    member, generation = _join_and_sync(conn, "g-error")
    rule = broker.inject("Heartbeat", error="REBALANCE_IN_PROGRESS", count=2)
    assert rule["api"] == "HEARTBEAT" and rule["error"] == "REBALANCE_IN_PROGRESS"
    codes = [_heartbeat(conn, "g-error", member, generation) for _ in range(3)]
    assert codes == [ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.REBALANCE_IN_PROGRESS, 0]
    seen = broker.injections()
    assert seen["rules"] == []
    fired = [f for f in seen["fired"] if f["rule"] == rule["id"]]
    assert [f["error"] for f in fired] == ["REBALANCE_IN_PROGRESS"] * 2
    assert fired[0]["client_id"] == "fault-test" and fired[0]["api_version"] == 3
    # The handler did not run: the group is still Stable at the same generation.
    state = broker.describe_group("g-error")
    assert (state["state"], state["generation_id"]) == ("Stable", generation)
    conn.close()


def test_an_error_takes_the_shape_of_the_apis_error_response(broker: KafkaBroker) -> None:
    conn = _connect(broker)
    broker.inject("FindCoordinator", error="COORDINATOR_LOAD_IN_PROGRESS")
    found = conn.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]), 4)
    assert [(c.key, c.error_code) for c in found.coordinators] == [
        ("a", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), ("b", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)]
    broker.inject("OffsetCommit", error="NOT_COORDINATOR")
    committed = conn.call(OffsetCommitRequest(
        group_id="g-shape", generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequestTopic(name="t", partitions=[
                OffsetCommitRequestPartition(partition_index=0, committed_offset=5)])]), 8)
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR
    assert broker.describe_group("g-shape")["offsets"] == {}  # nothing was committed
    conn.close()


def test_a_produce_error_reaches_every_partition_and_the_producer_retries(
        broker: KafkaBroker) -> None:
    confluent_io.create_topic(broker.bootstrap_servers, "t-produce", 2)
    rule = broker.inject("Produce", error="NOT_LEADER_OR_FOLLOWER", count=2,
                         topic="t-produce")
    delivered: list[tuple[int, int]] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers,
                         "enable.idempotence": True, "linger.ms": 0})
    for i in range(4):
        producer.produce("t-produce", value=b"%d" % i, partition=i % 2,
                         on_delivery=lambda err, msg: delivered.append(
                             (msg.partition(), msg.offset())) if err is None else None)
    assert producer.flush(30) == 0
    # Retried after the refusals, each record once: offsets 0 and 1 on each partition.
    assert sorted(delivered) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    fired = [f for f in broker.injections()["fired"] if f["rule"] == rule["id"]]
    assert [f["error"] for f in fired] == ["NOT_LEADER_OR_FOLLOWER"] * 2


def test_group_and_topic_filters(broker: KafkaBroker) -> None:
    conn = _connect(broker)
    broker.inject("JoinGroup", error="NOT_COORDINATOR", group_id="g-target")
    assert _join(conn, "g-other").error_code == 0
    assert _join(conn, "g-target").error_code == ErrorCode.NOT_COORDINATOR
    assert _join(conn, "g-target").error_code == 0
    broker.inject("OffsetCommit", error="NOT_COORDINATOR", topic="t-target")

    def commit(topic: str) -> int:
        return int(conn.call(OffsetCommitRequest(
            group_id="g-topic", generation_id_or_member_epoch=-1, member_id="", topics=[
                OffsetCommitRequestTopic(name=topic, partitions=[
                    OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]),
            8).topics[0].partitions[0].error_code)

    assert commit("t-other") != ErrorCode.NOT_COORDINATOR
    assert commit("t-target") == ErrorCode.NOT_COORDINATOR
    conn.close()


def test_a_dropped_connection_leaves_the_request_unhandled(broker: KafkaBroker) -> None:
    conn = _connect(broker)
    broker.inject("JoinGroup", drop=True, group_id="g-drop")
    with pytest.raises((ConnectionError, EOFError, OSError, AssertionError)):
        _join(conn, "g-drop")
    assert broker.describe_group("g-drop")["type"] == "none"
    assert [f["action"] for f in broker.injections()["fired"]][-1] == "drop"
    again = _connect(broker)
    assert _join(again, "g-drop").error_code == 0
    again.close()


def test_a_delayed_response_is_late_and_later_responses_wait_for_it(
        broker: KafkaBroker) -> None:
    conn = _connect(broker)
    broker.inject("Metadata", delay_ms=300)
    started = time.monotonic()
    first = conn.send(MetadataRequest(topics=[]), 12)
    second = conn.send(MetadataRequest(topics=[MetadataRequestTopic(name="x")]), 12)
    conn.receive(first)
    waited = time.monotonic() - started
    conn.receive(second)
    assert 0.3 <= waited < 5
    started = time.monotonic()
    conn.call(MetadataRequest(topics=[]), 12)
    assert time.monotonic() - started < 0.3
    conn.close()


@pytest.mark.parametrize(("args", "message"), [
    ({"api": "NoSuchApi", "error": "NOT_COORDINATOR"}, "unknown api"),
    ({"api": "JoinGroup", "error": "NO_SUCH_ERROR"}, "unknown error"),
    ({"api": "JoinGroup", "error": 0}, "non-zero"),
    ({"api": "JoinGroup"}, "exactly one"),
    ({"api": "JoinGroup", "drop": True, "delay_ms": 5}, "exactly one"),
    ({"api": "JoinGroup", "drop": True, "count": 0}, "count"),
    ({"api": "JoinGroup", "delay_ms": -1}, "delay_ms"),
    ({"api": "CreateTopics", "error": "NOT_CONTROLLER"}, "no error response"),
])
def test_rules_that_cannot_fire_are_refused(broker: KafkaBroker, args: dict[str, Any],
                                            message: str) -> None:
    api = args.pop("api")
    with pytest.raises(ValueError, match=message):
        broker.inject(api, **args)
    assert broker.injections()["rules"] == []


def test_describe_group_shows_members_and_their_session_timers(broker: KafkaBroker) -> None:
    conn = _connect(broker)
    member, generation = _join_and_sync(conn, "g-describe")
    state = broker.describe_group("g-describe")
    assert state["type"] == "classic" and state["state"] == "Stable"
    assert state["leader_id"] == member and state["generation_id"] == generation
    assert [m["member_id"] for m in state["members"]] == [member]
    heartbeat = [t for t in state["timers"] if t["kind"] == "heartbeat"]
    assert heartbeat and heartbeat[0]["key"] == [member]
    assert 0 < heartbeat[0]["due_in_ms"] <= 30_000
    assert broker.describe_group("no-such-group")["type"] == "none"
    conn.close()


# -- the HTTP control endpoint -------------------------------------------------------------


def _http(base: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_the_control_endpoint_injects_lists_describes_and_clears() -> None:
    with KafkaBroker(subprocess=True, extra_args=["--offsets-partitions", "1"]) as broker:
        base = f"http://{broker.host}:{broker._process.control_port()}"  # type: ignore[union-attr]
        status, answer = _http(base, "POST", "/faults",
                               {"api": "Heartbeat", "error": "NOT_COORDINATOR", "count": 1})
        assert status == 200 and answer["rule"]["remaining"] == 1
        conn = _connect(broker)
        member, generation = _join_and_sync(conn, "g-http")
        assert _heartbeat(conn, "g-http", member, generation) == ErrorCode.NOT_COORDINATOR
        assert _heartbeat(conn, "g-http", member, generation) == 0
        status, listed = _http(base, "GET", "/faults")
        assert status == 200 and listed["rules"] == []
        assert [f["error"] for f in listed["fired"]] == ["NOT_COORDINATOR"]
        status, group = _http(base, "GET", "/groups/g-http")
        assert status == 200 and group["state"] == "Stable"
        assert [m["member_id"] for m in group["members"]] == [member]
        assert _http(base, "POST", "/faults", {"api": "JoinGroup", "drop": True})[0] == 200
        assert _http(base, "DELETE", "/faults") == (200, {"removed": 1})
        for bad in ({"api": "JoinGroup"}, {"api": "JoinGroup", "drop": 1}, [1],
                    {"api": "JoinGroup", "drop": True, "surprise": 1},
                    {"api": ["JoinGroup"], "drop": True}):
            status, answer = _http(base, "POST", "/faults", bad)
            assert status == 400 and "error" in answer
        assert _http(base, "PUT", "/faults", {})[0] == 405
        assert _http(base, "GET", "/groups/")[0] == 404
        conn.close()
        # The Python API of a subprocess goes over the same endpoint.
        assert broker.inject("SyncGroup", delay_ms=10)["action"] == "delay"
        assert broker.clear_injections() == 1


def test_with_no_rule_the_request_path_is_untouched(broker: KafkaBroker) -> None:
    assert broker.broker is not None
    assert broker.broker.faults.by_api == {}
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5):
        pass
    conn = _connect(broker)
    assert _join(conn, "g-plain").error_code == 0
    conn.close()
