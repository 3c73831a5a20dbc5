"""Virtual time and transactions: an open transaction of a real producer is aborted by the
broker once the test moves time past `transaction.timeout.ms`, not a millisecond before,
and the abort frees read_committed readers (the last stable offset moves past it).

The broker looks for timed-out transactions every
`transaction.abort.timed.out.transaction.cleanup.interval.ms` (10 s, as Kafka), on its
clock, so the abort happens at the first check after the timeout.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException, Producer
from helpers.wire_client import WireConnection

from groupcoord.testing import KafkaBroker
from groupcoord.wire.generated.create_topics import CreatableTopic, CreateTopicsRequest
from groupcoord.wire.generated.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)

pytestmark = pytest.mark.interop

TXN_TIMEOUT_MS = 60_000
CHECK_INTERVAL_MS = 10_000
READ_COMMITTED = 1
LATEST = -1
WALL_BUDGET_S = 2.0


def _last_stable_offset(conn: WireConnection, topic: str) -> int:
    response = conn.call(ListOffsetsRequest(
        replica_id=-1, isolation_level=READ_COMMITTED,
        topics=[ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsPartition(partition_index=0, timestamp=LATEST)])]), 5)
    partition = response.topics[0].partitions[0]
    assert partition.error_code == 0
    return int(partition.offset)


def _wait_for_lso(conn: WireConnection, topic: str, expected: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while (lso := _last_stable_offset(conn, topic)) != expected:
        assert time.monotonic() < deadline, f"last stable offset {lso}, expected {expected}"
        time.sleep(0.01)


def test_an_open_transaction_times_out_in_virtual_time(unique_topic: str) -> None:
    with KafkaBroker(clock="manual") as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        conn = WireConnection(host, int(port), client_id="vt-txn")
        created = conn.call(CreateTopicsRequest(topics=[CreatableTopic(
            name=unique_topic, num_partitions=1, replication_factor=1)], timeout_ms=5000), 4)
        assert created.topics[0].error_code == 0
        producer = Producer({
            "bootstrap.servers": broker.bootstrap_servers, "transactional.id": unique_topic,
            "transaction.timeout.ms": TXN_TIMEOUT_MS})
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(unique_topic, value=b"never committed", partition=0)
        assert producer.flush(30) == 0
        assert _last_stable_offset(conn, unique_topic) == 0  # held by the open transaction

        assert broker.clock is not None
        start_ms = broker.clock.now_ms()
        started = time.monotonic()
        broker.advance(TXN_TIMEOUT_MS)  # the timeout is reached, not passed: still open
        # The check at the timeout ran (it armed the next one) and left the transaction.
        assert start_ms + TXN_TIMEOUT_MS + CHECK_INTERVAL_MS in broker.clock.pending()
        assert _last_stable_offset(conn, unique_topic) == 0
        broker.advance(CHECK_INTERVAL_MS)  # the next check finds it past its timeout
        # The record and the ABORT marker are stable now (offsets 0 and 1).
        _wait_for_lso(conn, unique_topic, 2, WALL_BUDGET_S)
        assert time.monotonic() - started < WALL_BUDGET_S

        # The coordinator fenced the producer's epoch: its commit cannot succeed.
        with pytest.raises(KafkaException):
            producer.commit_transaction(10)
        conn.close()
