"""One groupcoord node serving from PostgreSQL (`serve --storage URL --node-id N`), on a real
server, driven by confluent-kafka: records produced and fetched, a classic group that joins
and commits, a committed transaction; then the node stopped (SIGTERM, and SIGKILL) and a new
one started on the same storage with an empty data dir finds every acknowledged record, the
group's offsets, the transaction and the cluster id. Two live nodes share the partitions,
and neither appends anything to the partitions the other leads. PostgreSQL restarted
under an idempotent producer's load: nothing acknowledged lost, nothing stored twice. The
leader killed while another node follows: the follower takes over once the leases lapse; a
leader paused past its leases and resumed after a takeover writes nothing."""

from __future__ import annotations

import signal
import time
import uuid
from dataclasses import dataclass
from typing import cast

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.confluent_io import (
    AckLog,
    acks_all_producer,
    create_topic,
    high_watermarks,
    produce,
)
from helpers.polling import wait_for
from helpers.postgres_cluster import (
    SHORT_LEASE,
    committed_offsets,
    node_args,
    partition_leaders,
    produce_error,
    read_to_ends,
)
from helpers.postgres_server import PostgresServer

from groupcoord.wire.errors import ErrorCode

pytestmark = pytest.mark.timeout(180)

TOPIC = "orders"
PARTITIONS = 2
GROUP = "billing"
WAIT_S = 60.0


@dataclass
class Written:
    """What the first node acknowledged: every record a read_committed reader gets (the
    transaction's among them), and the group's committed offsets."""

    records: dict[tuple[int, int], bytes]
    committed: dict[int, int]
    # The high watermarks (a transaction marker takes an offset too).
    ends: dict[int, int]
    cluster_id: str


def _consume_group(bootstrap: str, count: int) -> dict[int, int]:
    """A classic group member reads `count` records from the start, commits, and leaves;
    the offsets it committed."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 10_000})
    consumer.subscribe([TOPIC])
    seen = 0
    positions: dict[int, int] = {}
    deadline = time.monotonic() + WAIT_S
    try:
        while seen < count:
            assert time.monotonic() < deadline, f"the group read {seen} of {count}"
            for msg in consumer.consume(num_messages=500, timeout=0.5):
                assert msg.error() is None, msg.error()
                seen += 1
                positions[cast(int, msg.partition())] = cast(int, msg.offset()) + 1
        consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in positions.items()],
                        asynchronous=False)
    finally:
        consumer.close()
    return positions


def _committed(bootstrap: str) -> dict[int, int]:
    return committed_offsets(bootstrap, GROUP, TOPIC, PARTITIONS)


def _commit_transaction(bootstrap: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap,
                         "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in values:
        producer.produce(TOPIC, value=value, partition=0)
    producer.commit_transaction(30)


def _read(bootstrap: str, isolation: str) -> dict[tuple[int, int], bytes]:
    return read_to_ends(bootstrap, TOPIC, PARTITIONS, isolation)


def _produce_acked(node: BrokerProcess, values: list[bytes]) -> AckLog:
    """Create the topic and produce `values`, each acknowledged; what was acknowledged."""
    create_topic(node.bootstrap, TOPIC, PARTITIONS)
    log = AckLog()
    producer = acks_all_producer(node.bootstrap)
    produce(producer, TOPIC, values, log)
    assert producer.flush(60) == 0 and not log.failed
    return log


def _write_everything(node: BrokerProcess) -> Written:
    log = _produce_acked(node, [f"record-{i:04d}".encode() for i in range(300)])
    committed = _consume_group(node.bootstrap, 300)
    transactional = [f"txn-{i}".encode() for i in range(10)]
    _commit_transaction(node.bootstrap, transactional)
    records = _read(node.bootstrap, "read_committed")
    assert {key: records[key] for key in log.acked} == log.acked
    assert sorted(records.values())[-10:] == sorted(transactional)  # "txn-" after "record-"
    return Written(records, committed, high_watermarks(node.bootstrap, TOPIC, PARTITIONS),
                   _cluster_id(node))


def _cluster_id(node: BrokerProcess) -> str:
    return str(AdminClient({"bootstrap.servers": node.bootstrap}).list_topics(
        timeout=30).cluster_id)


def _assert_found(node: BrokerProcess, written: Written) -> None:
    assert _cluster_id(node) == written.cluster_id
    assert high_watermarks(node.bootstrap, TOPIC, PARTITIONS) == written.ends
    assert _read(node.bootstrap, "read_committed") == written.records
    assert _committed(node.bootstrap) == written.committed


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_a_new_node_on_the_same_storage_finds_everything(
        broker_factory: BrokerFactory, storage_url: str, stop: str) -> None:
    first = broker_factory.create(node_args(storage_url, 1))
    written = _write_everything(first)
    if stop == "sigterm":
        assert first.stop() == 0
    else:
        first.kill()

    # Its own empty data dir: everything comes from PostgreSQL. The same node id takes over
    # the leases a killed process left live.
    second = broker_factory.create(node_args(storage_url, 1))
    _assert_found(second, written)
    # And it serves on: the log continues where it ended (an idempotent producer's id
    # claimed after every id the first node claimed).
    log = AckLog()
    producer = acks_all_producer(second.bootstrap, **{"enable.idempotence": True})
    produce(producer, TOPIC, [b"after"], log)
    assert producer.flush(30) == 0 and not log.failed
    ends = high_watermarks(second.bootstrap, TOPIC, PARTITIONS)
    assert sum(ends.values()) == sum(written.ends.values()) + 1


def _produce_error(node: BrokerProcess, partition: int) -> int:
    return produce_error(node, TOPIC, partition)


def _spread(*nodes: BrokerProcess) -> dict[int, int]:
    """Once the live nodes share the topic's two partitions (one each, by their placement),
    every node telling the same: partition -> leader."""
    views: list[dict[int, int]] = []

    def spread() -> bool:
        views[:] = [partition_leaders(node, TOPIC) for node in nodes]
        return (all(view == views[0] for view in views)
                and set(views[0].values()) == set(range(1, len(nodes) + 1)))
    wait_for(spread, "the partitions spread over the nodes, every node agreeing", WAIT_S,
             lambda: f"leaders per node {views}", interval=0.2)
    return views[0]


def test_a_second_node_appends_nothing_where_the_first_leads(
        broker_factory: BrokerFactory, storage_url: str) -> None:
    """Two live nodes share the partitions; each node's produce to the partition the other
    leads is NOT_LEADER_OR_FOLLOWER with nothing written, and the leaders are unaffected."""
    first = broker_factory.create(node_args(storage_url, 1))
    _produce_acked(first, [f"r-{i}".encode() for i in range(20)])

    second = broker_factory.create(node_args(storage_url, 2))
    leaders = _spread(first, second)
    nodes = {1: first, 2: second}
    before = _read(first.bootstrap, "read_uncommitted")
    for partition, leader in leaders.items():
        other = nodes[3 - leader]
        assert _produce_error(other, partition) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _read(first.bootstrap, "read_uncommitted") == before
    # The leaders are unaffected.
    for partition, leader in leaders.items():
        assert _produce_error(nodes[leader], partition) == ErrorCode.NONE


def test_postgresql_restarted_under_produce_load_loses_nothing_acknowledged(
        broker_factory: BrokerFactory, storage_url: str,
        postgres_server: PostgresServer) -> None:
    """An idempotent producer streams while PostgreSQL restarts: meanwhile the node answers
    with retriable errors (it says so in its log), the producer retries, and afterwards
    every acknowledged record is at its offset and no record is stored twice."""
    node = broker_factory.create(node_args(storage_url, 1))
    create_topic(node.bootstrap, TOPIC, PARTITIONS)
    log = AckLog()
    producer = acks_all_producer(node.bootstrap, **{"enable.idempotence": True,
                                                    "message.timeout.ms": 120_000})
    values = [f"v-{i:05d}".encode() for i in range(3000)]
    restarts: list[int] = []

    def restart_once_under_load() -> bool:
        if not restarts and len(log.acked) >= 500:
            restarts.append(len(log.acked))
            postgres_server.restart()
        return False

    produce(producer, TOPIC, values, log, after_each=restart_once_under_load,
            max_in_flight=200)
    assert producer.flush(120) == 0
    assert restarts and not log.failed and not log.reused
    assert len(log.acked) == len(values)
    records = _read(node.bootstrap, "read_uncommitted")
    assert {key: records[key] for key in log.acked} == log.acked
    assert sorted(records.values()) == sorted(values)  # each once
    assert "PostgreSQL" in node.log_text(current_run=True)  # the retriable errors, logged


def test_a_following_node_takes_over_when_the_leader_is_killed(
        broker_factory: BrokerFactory, storage_url: str) -> None:
    """Node 2 follows the partition node 1 leads; node 1 is SIGKILLed; once node 1's leases
    lapse node 2 takes them (a lease pass), catches its copies up and serves: every record
    node 1 acknowledged, the group's committed offsets (its offsets shard loaded on node 2),
    and new appends after them."""
    first = broker_factory.create(node_args(storage_url, 1) + SHORT_LEASE)
    log = _produce_acked(first, [f"r-{i:03d}".encode() for i in range(100)])
    committed = _consume_group(first.bootstrap, 100)
    ends = high_watermarks(first.bootstrap, TOPIC, PARTITIONS)

    second = broker_factory.create(node_args(storage_url, 2) + SHORT_LEASE)
    leaders = _spread(first, second)
    followed = next(p for p, leader in leaders.items() if leader == 1)
    assert _produce_error(second, followed) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    first.kill()

    wait_for(lambda: _produce_error(second, 0) == ErrorCode.NONE, "node 2 to lead", WAIT_S,
             lambda: second.log_tail(20), interval=0.2)
    wait_for(lambda: _produce_error(second, 1) == ErrorCode.NONE, "node 2 to lead", WAIT_S,
             lambda: second.log_tail(20), interval=0.2)
    after = high_watermarks(second.bootstrap, TOPIC, PARTITIONS)
    assert after == {p: end + 1 for p, end in ends.items()}
    records = _read(second.bootstrap, "read_uncommitted")
    assert {key: records[key] for key in log.acked} == log.acked
    assert _committed(second.bootstrap) == committed


def test_a_paused_leader_resumed_after_a_takeover_writes_nothing(
        broker_factory: BrokerFactory, storage_url: str) -> None:
    """Node 1 is paused (SIGSTOP) past its leases while node 2 is live; node 2 takes over and
    appends; node 1 resumed (SIGCONT) is refused every append at its old epoch (fenced, or
    stepped down by its next lease pass) and unloads its offsets shards; nothing it tried is
    readable. It rejoins as a live node and may take its share back later, at a new epoch:
    an append it acknowledges then comes after everything node 2 wrote. Node 2 serves the
    group's offsets."""
    first = broker_factory.create(node_args(storage_url, 1) + SHORT_LEASE)
    log = _produce_acked(first, [f"r-{i:03d}".encode() for i in range(100)])
    committed = _consume_group(first.bootstrap, 100)
    second = broker_factory.create(node_args(storage_url, 2) + SHORT_LEASE)
    _spread(first, second)
    assert first.proc is not None

    first.proc.send_signal(signal.SIGSTOP)
    try:
        for partition in range(PARTITIONS):
            def led(p: int = partition) -> bool:
                return _produce_error(second, p) == ErrorCode.NONE
            wait_for(led, "node 2 to lead", WAIT_S, lambda: second.log_tail(20), interval=0.2)
        taken_over = _read(second.bootstrap, "read_uncommitted")
        paused_log = len(first.log_text(current_run=True))
    finally:
        first.proc.send_signal(signal.SIGCONT)

    codes = [_produce_error(first, p) for p in range(PARTITIONS)]
    assert set(codes) <= {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE}, codes

    def stepped_down() -> bool:
        resumed = first.log_text(current_run=True)[paused_log:]
        return "leases lost" in resumed and "unloaded shard __consumer_offsets" in resumed
    wait_for(stepped_down, "node 1 to step down and unload its offsets shards", WAIT_S,
             lambda: first.log_tail(20), interval=0.2)
    after = _read(second.bootstrap, "read_uncommitted")
    assert {key: after[key] for key in taken_over} == taken_over
    assert len(after) == len(taken_over) + codes.count(ErrorCode.NONE)
    assert {key: taken_over[key] for key in log.acked} == log.acked
    assert _committed(second.bootstrap) == committed
