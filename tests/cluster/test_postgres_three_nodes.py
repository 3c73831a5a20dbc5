"""Three groupcoord nodes serving one cluster on PostgreSQL (`serve --storage URL --node-id N`
subprocesses on a real server), so a client can use any of them: the partitions' leases and
the group coordinators are spread over the live nodes, every node's Metadata, FindCoordinator
and DescribeCluster tell the same leaders, coordinators and live nodes, and a topic created
on one node is served by the others. A confluent-kafka producer and consumer group (classic,
and the consumer protocol) bootstrapped from one node only produce and consume everything;
the node leading a partition and coordinating the group is SIGKILLed: the others take over
within the lease and one heartbeat interval, and the group carries on with no acknowledged
record lost."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.confluent_io import AckLog, acks_all_producer, create_topic, high_watermarks, produce
from helpers.polling import wait_for
from helpers.postgres_cluster import (
    SHORT_LEASE,
    group_coordinator,
    offset_fetch_error,
    partition_leaders,
    produce_error,
    spread_leaders,
    start_cluster,
)

from groupcoord.wire.errors import ErrorCode

pytestmark = pytest.mark.timeout(300)

TOPIC = "events"
PARTITIONS = 6
NODE_IDS = {1, 2, 3}
WAIT_S = 60.0
# SHORT_LEASE's lease and heartbeat interval.
LEASE_S, HEARTBEAT_S = 3.0, 0.5
# Room for a loaded machine's scheduling and this test's polling, past lease + heartbeat.
SCHEDULING_SLACK_S = 1.0


def _start(factory: BrokerFactory, storage_url: str) -> dict[int, BrokerProcess]:
    return start_cluster(factory, storage_url, SHORT_LEASE)


def _spread(nodes: dict[int, BrokerProcess]) -> dict[int, int]:
    return spread_leaders(nodes, TOPIC, PARTITIONS)


def test_three_nodes_share_the_partitions_and_the_coordinators(
        broker_factory: BrokerFactory, storage_url: str) -> None:
    nodes = _start(broker_factory, storage_url)
    # Created on node 1; nodes 2 and 3 learn it from the catalog and take their shares.
    create_topic(nodes[1].bootstrap, TOPIC, PARTITIONS)
    leaders = _spread(nodes)
    for partition, leader in leaders.items():
        for node_id, node in nodes.items():
            code = produce_error(node, TOPIC, partition)
            assert code == (ErrorCode.NONE if node_id == leader
                            else ErrorCode.NOT_LEADER_OR_FOLLOWER), (partition, node_id)

    # Groups' coordinators: the leaders of their __consumer_offsets partitions, the same
    # from every node, spread over the three.
    coordinators = {}
    for i in range(12):
        answers = {group_coordinator(node, f"group-{i}") for node in nodes.values()}
        assert len(answers) == 1, answers
        code, coordinator = answers.pop()
        assert code == ErrorCode.NONE
        coordinators[f"group-{i}"] = coordinator
        for node_id, node in nodes.items():
            assert offset_fetch_error(node, f"group-{i}") == (
                ErrorCode.NONE if node_id == coordinator else ErrorCode.NOT_COORDINATOR)
    assert set(coordinators.values()) == NODE_IDS

    for node in nodes.values():
        admin = AdminClient({"bootstrap.servers": node.bootstrap})
        described = admin.describe_cluster(request_timeout=15).result()
        assert {n.id for n in described.nodes} == NODE_IDS
        assert {n.port for n in described.nodes} == {n.port for n in nodes.values()}


def _consumer(bootstrap: str, group: str, protocol: str) -> Consumer:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group,
                              "auto.offset.reset": "earliest", "enable.auto.commit": False,
                              "group.protocol": protocol}
    if protocol == "classic":
        config["session.timeout.ms"] = 10_000
    return Consumer(config)


def _consume(consumer: Consumer, seen: dict[tuple[int, int], bytes], wanted: set[bytes]) -> None:
    """Consume until every value in `wanted` was seen; commit the positions."""
    deadline = time.monotonic() + WAIT_S
    while not wanted <= set(seen.values()):
        assert time.monotonic() < deadline, (
            f"the group read {len(set(seen.values()) & wanted)} of {len(wanted)}")
        for msg in consumer.consume(num_messages=500, timeout=0.2):
            error = msg.error()
            if error is not None:
                # Transient errors while a node is down (the client retries); none fatal.
                assert not error.fatal(), error
                continue
            seen[(cast(int, msg.partition()), cast(int, msg.offset()))] = cast(bytes,
                                                                               msg.value())
    consumer.commit(asynchronous=False)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_the_group_carries_on_when_its_coordinator_and_leader_is_killed(
        broker_factory: BrokerFactory, storage_url: str, protocol: str) -> None:
    nodes = _start(broker_factory, storage_url)
    create_topic(nodes[1].bootstrap, TOPIC, PARTITIONS)
    leaders = _spread(nodes)
    group = f"{protocol}-group"
    code, victim = group_coordinator(nodes[1], group)
    assert code == ErrorCode.NONE
    victim_partitions = [p for p, leader in leaders.items() if leader == victim]
    assert victim_partitions  # six partitions over three nodes: two each
    survivors = {n: node for n, node in nodes.items() if n != victim}
    bootstrap = survivors[min(survivors)].bootstrap  # the clients know this node only

    log = AckLog()
    producer = acks_all_producer(bootstrap, **{"enable.idempotence": True,
                                               "message.timeout.ms": 120_000})
    before = [f"before-{i:04d}".encode() for i in range(600)]
    produce(producer, TOPIC, before, log)
    assert producer.flush(60) == 0 and not log.failed
    consumer = _consumer(bootstrap, group, protocol)
    consumer.subscribe([TOPIC])
    seen: dict[tuple[int, int], bytes] = {}
    try:
        _consume(consumer, seen, set(before))

        killed_at = time.monotonic()
        nodes[victim].kill()

        def taken_over() -> bool:
            """A survivor leads each of the victim's partitions (its own Metadata says so as
            soon as it holds the lease) and coordinates the group (its shard loaded)."""
            views = {n: partition_leaders(node, TOPIC)
                     for n, node in survivors.items()}
            led = all(any(views[n].get(p) == n for n in survivors) for p in victim_partitions)
            return led and any(offset_fetch_error(node, group) == ErrorCode.NONE
                               for node in survivors.values())
        wait_for(taken_over, "the survivors to take over", WAIT_S,
                 lambda: "\n".join(node.log_tail(10) for node in survivors.values()),
                 interval=0.05)
        takeover_s = time.monotonic() - killed_at

        def told() -> bool:
            """The bootstrap node sends clients to the survivors."""
            found = partition_leaders(survivors[min(survivors)], TOPIC)
            return (all(found.get(p) in survivors for p in victim_partitions)
                    and group_coordinator(survivors[min(survivors)], group)[1] in survivors)
        wait_for(told, "the metadata to name the new leaders", WAIT_S, interval=0.05)
        told_s = time.monotonic() - killed_at
        print(f"\ntakeover after SIGKILL ({protocol}): leases and group taken over in "
              f"{takeover_s:.2f} s, clients told in {told_s:.2f} s "
              f"(lease {LEASE_S} s, heartbeat interval {HEARTBEAT_S} s)")
        assert takeover_s <= LEASE_S + HEARTBEAT_S + SCHEDULING_SLACK_S

        after = [f"after-{i:04d}".encode() for i in range(600)]
        produce(producer, TOPIC, after, log)
        assert producer.flush(120) == 0 and not log.failed and not log.reused
        _consume(consumer, seen, set(after))
        group_done_s = time.monotonic() - killed_at
        print(f"group consumed everything produced after the kill {group_done_s:.2f} s "
              "after it")
    finally:
        consumer.close()

    # Nothing acknowledged lost, nothing stored twice, and the group's offsets at the end.
    assert {key: seen[key] for key in log.acked} == log.acked
    assert sorted(seen.values()) == sorted(before + after)
    ends = high_watermarks(bootstrap, TOPIC, PARTITIONS)
    checker = _consumer(bootstrap, group, protocol)
    try:
        committed = checker.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                      timeout=30)
    finally:
        checker.close()
    assert {tp.partition: tp.offset for tp in committed} == ends
