"""Transactional offset commits with a real client (librdkafka through confluent-kafka):
`send_offsets_to_transaction` (AddOffsetsToTxn + TxnOffsetCommit) then EndTxn, whose
COMMIT/ABORT marker reaches `__consumer_offsets` through the group coordinator's
`complete_transaction`.

- A committed transaction's offsets become the group's committed offsets.
- An aborted transaction's offsets never do: the group keeps what it had.
- While a transaction is open, a read_committed consumer (RequireStable) does not get the
  unstable offset; a plain admin-style fetch sees the last committed one.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from helpers import confluent_io
from helpers.broker import BrokerProcess

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

TOPIC = "txn-offsets-in"
GROUP = "txn-offsets-group"


def _consumer(bootstrap: str, isolation: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                     "enable.auto.commit": False, "isolation.level": isolation})


def _txn_producer(bootstrap: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "txn-offsets-tx",
                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)
    return producer


def _committed(bootstrap: str, isolation: str = "read_uncommitted",
               timeout: float = 10) -> int:
    consumer = _consumer(bootstrap, isolation)
    try:
        (tp,) = consumer.committed([TopicPartition(TOPIC, 0)], timeout=timeout)
        return int(tp.offset)
    finally:
        consumer.close()


def _send_offsets(producer: Producer, bootstrap: str, offset: int) -> None:
    consumer = _consumer(bootstrap, "read_committed")
    try:
        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, offset)],
                                             consumer.consumer_group_metadata(), 30)
    finally:
        consumer.close()


def test_commit_and_abort_transactional_offsets(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    confluent_io.create_topic(bootstrap, TOPIC, 1)
    producer = _txn_producer(bootstrap)

    _send_offsets(producer, bootstrap, 5)
    producer.commit_transaction(30)
    assert _committed(bootstrap) == 5

    _send_offsets(producer, bootstrap, 9)
    producer.abort_transaction(30)
    assert _committed(bootstrap) == 5

    _send_offsets(producer, bootstrap, 12)
    # Open: RequireStable fetches get UNSTABLE_OFFSET_COMMIT until the transaction ends.
    assert _committed(bootstrap) == 5
    with pytest.raises(KafkaException) as info:
        _committed(bootstrap, "read_committed", timeout=3)
    # librdkafka retries UNSTABLE_OFFSET_COMMIT until its timeout.
    assert info.value.args[0].code() == KafkaError._TIMED_OUT
    producer.commit_transaction(30)
    assert _committed(bootstrap, "read_committed") == 12
