"""Hostile and malformed input, differentially: what each broker answers (or whether it
closes the connection) for unsupported versions, unknown APIs, truncated and oversized
frames, oversized fields and requests aimed at the wrong kind of group.

Mirrors `SocketServer`/`RequestContext.parseRequest` (a request that cannot be parsed closes
the connection; ApiVersions of an unknown version is answered at v0 with UNSUPPORTED_VERSION,
KIP-511) and the coordinators' validation of hostile but well-formed requests.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

from conformance import classic, consumer
from conformance.conversation import Conversation
from conformance.differential import Scenario
from conformance.offsets import commit, fetch
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.wire.generated.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from groupcoord.wire.generated.share_fetch import (
    FetchPartition,
    FetchTopic,
    ShareFetchRequest,
    ShareFetchResponse,
)
from groupcoord.wire.headers import (
    RequestHeader,
    decode_response_header,
    encode_request_header,
)

Run = Callable[[Scenario], None]
API_VERSIONS_KEY = 18
JOIN_GROUP_KEY = 11
CLOSE_WAIT_S = 10.0
M1 = consumer.member_id(1)
# Every API of the group, offset, transaction, share and streams coordinators, and ApiVersions.
GROUP_API_KEYS = frozenset({8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 22, 24, 25, 26, 28, 42, 47,
                            65, 66, 68, 69, 76, 77, 78, 79, 88, 89, 90, 91, 92, 93})


def frame(api_key: int, version: int, body: bytes, header_version: int = 1,
          correlation_id: int = 1) -> bytes:
    out = bytearray()
    encode_request_header(out, RequestHeader(api_key, version, correlation_id, "hostile"),
                          header_version)
    out += body
    return struct.pack(">i", len(out)) + bytes(out)


def closes_connection(c: Conversation, raw: bytes) -> bool:
    """Send `raw` on a fresh connection; whether the broker closes it without answering."""
    conn = c.connect_raw("hostile")
    conn.sock.settimeout(CLOSE_WAIT_S)
    conn.send_raw(raw)
    return conn.is_closed_by_peer()


def test_api_versions_of_an_unknown_version(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        conn = c.connect_raw("hostile")
        conn.send_raw(frame(API_VERSIONS_KEY, 99, b"\x00" * 8, header_version=2))
        data = conn.read_frame()
        _correlation, pos = decode_response_header(data, 0, 0)
        response, _end = ApiVersionsResponse.decode(data, pos, 0)
        own = [k for k in response.api_keys if k.api_key == API_VERSIONS_KEY]
        # The newest version is compared in test_api_version_ranges_of_group_apis.
        c.record("answered at v0", {"error_code": response.error_code,
                                     "min_version": [k.min_version for k in own]})
    differential(scenario)


def test_api_versions_v5_checks_the_cluster_and_node(differential: Run) -> None:
    """KIP-1242: a v5 ApiVersions naming another cluster or node is told to rebootstrap."""
    def scenario(c: Conversation) -> None:
        described = c.quiet(DescribeClusterRequest(), 1, DescribeClusterResponse)
        cluster, node = described.cluster_id, described.brokers[0].broker_id
        cases = {
            "this cluster and node": (cluster, node),
            "another cluster": (cluster + "-other", node),
            "another node": (cluster, node + 1),
            "no cluster and no node": (None, -1),
            "a cluster without a node": (cluster, -1),
            "a node without a cluster": (None, node),
        }
        for case, (cluster_id, node_id) in cases.items():
            answer = c.quiet(ApiVersionsRequest(
                client_software_name="conformance", client_software_version="1",
                cluster_id=cluster_id, node_id=node_id), 5, ApiVersionsResponse)
            c.record(f"v5 naming {case}", {"error_code": answer.error_code,
                                            "api_keys_listed": bool(answer.api_keys)})
    differential(scenario)


@pytest.mark.xfail(strict=True, reason=(
    "groupcoord keeps the share APIs' v0 (Kafka 3.9 clients) where Kafka 4.4 starts at v1"))
def test_api_version_ranges_of_group_apis(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        versions = c.quiet(ApiVersionsRequest(client_software_name="conformance",
                                              client_software_version="1"), 3,
                           ApiVersionsResponse)
        c.record("version ranges", sorted(
            (k.api_key, k.min_version, k.max_version) for k in versions.api_keys
            if k.api_key in GROUP_API_KEYS))
    differential(scenario)


def test_unparseable_requests_close_the_connection(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        join = classic.join_request(c.name("g"))
        body = bytearray()
        join.encode_into(body, classic.JOIN_VERSION)
        cases = {
            "JoinGroup of an unsupported version": frame(JOIN_GROUP_KEY, 99, bytes(body), 2),
            "an unknown API key": frame(9_999, 0, b""),
            "a truncated JoinGroup body": frame(JOIN_GROUP_KEY, classic.JOIN_VERSION,
                                                bytes(body[:9]), 2),
            "a frame larger than socket.request.max.bytes": struct.pack(">i", 200 << 20),
            "a negative frame size": struct.pack(">i", -5),
        }
        for case, raw in cases.items():
            c.record(f"closed after {case}", closes_connection(c, raw))
    differential(scenario)


def test_a_broker_still_serves_after_hostile_frames(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        closes_connection(c, frame(9_999, 0, b"\x01\x02"))
        closes_connection(c, struct.pack(">i", 200 << 20))
        classic.stable_single_member(c, c.name("g"))
        classic.describe_groups(c, "describe after hostile frames", c.name("g"))
    differential(scenario)


def test_oversized_group_and_member_ids(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        long_group = c.name("g" * 5_000)
        classic.join(c, "classic join with a 5000-character group id", long_group)
        consumer.heartbeat(c, "consumer member id over 36 characters",
                           consumer.join_request(c.name("g"), "m" * 37, [topic.name]))
        consumer.heartbeat(c, "consumer member id of 10000 characters",
                           consumer.join_request(c.name("g"), "m" * 10_000, [topic.name]))
        classic.heartbeat(c, "classic heartbeat with a 10000-character member id",
                          c.name("g"), 1, "x" * 10_000)
        commit(c, "commit with a 20000-character topic name", c.name("g"), "t" * 20_000,
               {0: 1})
    differential(scenario)


def test_classic_requests_to_a_consumer_group(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        joined = consumer.join(c, "consumer join", group, M1, [topic.name])
        classic.heartbeat(c, "classic heartbeat of a consumer member", group,
                          joined.member_epoch, M1)
        classic.sync(c, "classic sync of a consumer member", group, joined.member_epoch, M1)
        classic.heartbeat(c, "classic heartbeat of an unknown member", group, 1, "nobody")
        classic.leave(c, "classic leave of a consumer member", group, (M1, None))
        classic.describe_groups(c, "describe the consumer group", group)
    differential(scenario)


def test_consumer_heartbeats_with_hostile_fields(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        hb = consumer.heartbeat
        hb(c, "subscribed to 2000 missing topics", ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=M1, member_epoch=0, rebalance_timeout_ms=30_000,
            subscribed_topic_names=[c.name(f"missing-{i}") for i in range(2_000)],
            topic_partitions=[]))
        hb(c, "owning partitions of an unknown topic id", ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=M1, member_epoch=0, rebalance_timeout_ms=30_000,
            subscribed_topic_names=[topic.name],
            topic_partitions=consumer.owned(topic, 0) + [consumer.TopicPartitions(
                topic_id=b"\x07" * 16, partitions=[0, 1])]))
        hb(c, "negative rebalance timeout", ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=consumer.member_id(2), member_epoch=0,
            rebalance_timeout_ms=-5, subscribed_topic_names=[topic.name], topic_partitions=[]))
        hb(c, "empty regex", consumer.join_request(group, consumer.member_id(3), regex=""))
        hb(c, "blank group id", consumer.join_request("   ", M1, [topic.name]))
    differential(scenario)


def test_share_fetch_of_unknown_topic_and_partition(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        c.call("share fetch of an unknown topic id and partition",
               ShareFetchRequest(group_id=group, member_id=M1, share_session_epoch=0,
                                 max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                                 max_records=10, batch_size=10, topics=[
                                     FetchTopic(topic_id=b"\x09" * 16, partitions=[
                                         FetchPartition(partition_index=0)]),
                                     FetchTopic(topic_id=topic.topic_id, partitions=[
                                         FetchPartition(partition_index=7)])]),
               2, ShareFetchResponse)
    differential(scenario)


def test_offset_fetch_of_many_unknown_groups(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        for i in range(3):
            fetch(c, f"fetch unknown group {i}", c.name(f"missing-{i}"), [topic], (0, 1, 99))
        fetch(c, "fetch with an empty group id", "", [topic])
        commit(c, "commit with an empty group id", "", topic.name, {0: 1})
        fetch(c, "fetch v9 of the empty group id after the commit", "", [topic])
        commit(c, "commit v2 with an empty group id", "", topic.name, {0: 2}, version=2)
    differential(scenario)
