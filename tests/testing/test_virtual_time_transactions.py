"""Virtual time and transactions: an open transaction of a real producer (confluent-kafka,
kafka-python, aiokafka, the Java client) is aborted by the broker once the test moves time past `transaction.timeout.ms`, not a millisecond before,
and the abort frees read_committed readers (the last stable offset moves past it).

The broker looks for timed-out transactions every
`transaction.abort.timed.out.transaction.cleanup.interval.ms` (10 s, as Kafka), on its
clock, so the abort happens at the first check after the timeout.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import pytest
from confluent_kafka import Producer
from helpers.java import harness_command
from helpers.polling import wait_for
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
    seen: list[int] = []

    def reached() -> bool:
        seen.append(_last_stable_offset(conn, topic))
        return seen[-1] == expected

    wait_for(reached, f"last stable offset {expected}", timeout,
             lambda: f"last stable offset {seen[-1]}", interval=0.01)


class OpenTransaction(Protocol):
    """A producer of one client with one record produced in a transaction left open."""

    def commit(self) -> None: ...

    def close(self) -> None: ...


class ConfluentTransaction:
    def __init__(self, bootstrap: str, tid: str, topic: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                                  "transaction.timeout.ms": TXN_TIMEOUT_MS})
        self.producer.init_transactions(30)
        self.producer.begin_transaction()
        self.producer.produce(topic, value=b"never committed", partition=0)
        assert self.producer.flush(30) == 0

    def commit(self) -> None:
        self.producer.commit_transaction(10)

    def close(self) -> None:
        pass


class KafkaPythonTransaction:
    def __init__(self, bootstrap: str, tid: str, topic: str) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid,
                                      transaction_timeout_ms=TXN_TIMEOUT_MS)
        self.producer.init_transactions()
        self.producer.begin_transaction()
        self.producer.send(topic, b"never committed", partition=0).get(30)

    def commit(self) -> None:
        self.producer.commit_transaction()

    def close(self) -> None:
        self.producer.close(timeout=5)


class AiokafkaTransaction:
    """aiokafka on a loop of its own thread, so the test drives it like the others."""

    def __init__(self, bootstrap: str, tid: str, topic: str) -> None:
        from aiokafka import AIOKafkaProducer

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def open_() -> AIOKafkaProducer:
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid,
                                        transaction_timeout_ms=TXN_TIMEOUT_MS)
            await producer.start()
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"never committed", partition=0)
            return producer
        self.producer = self._run(open_())

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def commit(self) -> None:
        self._run(self.producer.commit_transaction())

    def close(self) -> None:
        try:
            self._run(self.producer.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


class JavaTransaction:
    """The Java harness's `txn-produce` step `hold`: the transaction stays open, in a live
    producer, until the test tells it to commit."""

    def __init__(self, bootstrap: str, tid: str, topic: str) -> None:
        self.proc = subprocess.Popen(
            [*harness_command("txn-produce"), "--bootstrap", bootstrap, "--topic", topic,
             "--transactional-id", tid, "--plan", "hold:1",
             "--prop", f"transaction.timeout.ms={TXN_TIMEOUT_MS}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        self._event("held")

    def _event(self, *names: str) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{") and (event := json.loads(line)).get("event") in names:
                return dict(event)
        raise AssertionError(f"the Java producer ended before {names}")

    def commit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("commit\n")
        self.proc.stdin.flush()
        event = self._event("txn-commit-failed", "txn")
        if event["event"] == "txn-commit-failed":
            raise RuntimeError(event["error"])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


CLIENTS: dict[str, Callable[[str, str, str], OpenTransaction]] = {
    "confluent": ConfluentTransaction,
    "kafka-python": KafkaPythonTransaction,
    "aiokafka": AiokafkaTransaction,
    "java": JavaTransaction,
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_an_open_transaction_times_out_in_virtual_time(client: str, unique_topic: str) -> None:
    with KafkaBroker(clock="manual") as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        conn = WireConnection(host, int(port), client_id="vt-txn")
        created = conn.call(CreateTopicsRequest(topics=[CreatableTopic(
            name=unique_topic, num_partitions=1, replication_factor=1)], timeout_ms=5000), 4)
        assert created.topics[0].error_code == 0
        txn = CLIENTS[client](broker.bootstrap_servers, unique_topic, unique_topic)
        try:
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

            # The abort bumped the producer's epoch: each client of transaction version 1
            # reports its commit fenced (ProducerFenced, ProducerFencedError, KafkaError
            # _FENCED); the Java 4.4 client runs transaction version 2 (finalized), where
            # the bumped epoch makes its commit a retry of a transaction that ended in an
            # abort: InvalidTxnStateException, as from Kafka 4.4
            # (tests/interop/test_interop_txn_v2.py compares the two brokers).
            with pytest.raises(Exception) as failure:
                txn.commit()
            expected = "invalidtxnstate" if client == "java" else "fenced"
            assert expected in f"{type(failure.value).__name__} {failure.value}".lower()
        finally:
            txn.close()
            conn.close()
