"""Kafka's `TransactionStateManager.appendTransactionToLog` answers a failed append to
`__transaction_state` by the log's error: NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR
become NOT_COORDINATOR; UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND)
and REQUEST_TIMED_OUT COORDINATOR_NOT_AVAILABLE; MESSAGE_TOO_LARGE and
RECORD_LIST_TOO_LARGE UNKNOWN_SERVER_ERROR; anything else is answered as it is. Each
failure also fail-stops the shard, which has reloaded from its log before the answer."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.transactions.state import S
from groupcoord.logformat.internal_topics import TXN_TOPIC
from groupcoord.server.runtime.append_errors import log_error, txn_append_error
from groupcoord.server.runtime.shard_task import ShardState
from groupcoord.storage.config import (
    InvalidRecordError,
    KafkaStorageError,
    RecordBatchTooLargeError,
)
from groupcoord.storage.faults import FaultInjectingFileIO, FaultRule
from groupcoord.wire.errors import ErrorCode as E

TID = "append-errors"

KAFKA_MAPPING = [
    (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE),
    (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
    (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
    (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
    (E.RECORD_LIST_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
    (E.CORRUPT_MESSAGE, E.CORRUPT_MESSAGE),  # not mapped: answered as it is
    (E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR),
]


@pytest.mark.parametrize(("log_code", "answer"), KAFKA_MAPPING)
def test_each_log_error_maps_as_kafka(log_code: int, answer: int) -> None:
    assert txn_append_error(ApiError(log_code)) == answer


@pytest.mark.parametrize(("exc", "code"), [
    (KeyError((TXN_TOPIC, 0)), E.UNKNOWN_TOPIC_OR_PARTITION),
    (KafkaStorageError("fsync failed"), E.KAFKA_STORAGE_ERROR),
    (OSError(errno.EIO, "Input/output error"), E.KAFKA_STORAGE_ERROR),
    (RecordBatchTooLargeError("too large"), E.MESSAGE_TOO_LARGE),
    (InvalidRecordError("bad batch"), E.CORRUPT_MESSAGE),
    (RuntimeError("a bug"), E.UNKNOWN_SERVER_ERROR),
])
def test_the_log_layers_exceptions_are_kafkas_log_errors(exc: BaseException, code: int) -> None:
    assert log_error(exc) == code


def _raising(exc: BaseException) -> Any:
    def append(*_args: Any, **_kwargs: Any) -> Any:
        raise exc
    return append


@pytest.mark.parametrize(("exc", "answer"), [
    (KafkaStorageError("disk refused the write"), E.NOT_COORDINATOR),
    (ApiError(E.NOT_LEADER_OR_FOLLOWER), E.NOT_COORDINATOR),
    (KeyError((TXN_TOPIC, 0)), E.COORDINATOR_NOT_AVAILABLE),
    (ApiError(E.NOT_ENOUGH_REPLICAS), E.COORDINATOR_NOT_AVAILABLE),
    (ApiError(E.RECORD_LIST_TOO_LARGE), E.UNKNOWN_SERVER_ERROR),
])
def test_a_failed_transaction_append_answers_kafkas_error(
        tmp_path: Path, exc: BaseException, answer: int) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            txns = b.broker.transactions
            init = await txns.init_producer_id(TID, 60_000, None)
            assert init.error == E.NONE
            pid, epoch = init.producer_id, init.producer_epoch
            task = txns.runtime.shards[txns.partition_for(TID)]
            real = txns.runtime.append
            txns.runtime.append = _raising(exc)
            assert await txns.add_partitions(TID, pid, epoch, [("t", 0)]) == answer
            txns.runtime.append = real
            assert task.reloads == 1 and task.state is ShardState.ACTIVE
            md = txns.metadata(TID)
            assert md is not None and md.state == S.EMPTY and not md.partitions
            assert await txns.add_partitions(TID, pid, epoch, [("t", 0)]) == E.NONE  # the retry
    run(go())


def test_a_disk_refusing_the_transaction_log_answers_not_coordinator(tmp_path: Path) -> None:
    async def go() -> None:
        io = FaultInjectingFileIO()
        async with InProcBroker(tmp_path, file_io=io) as b:
            txns = b.broker.transactions
            init = await txns.init_producer_id(TID, 60_000, None)
            pid, epoch = init.producer_id, init.producer_epoch
            p = txns.partition_for(TID)
            io.add(FaultRule("write", errno.EIO, suffix=f"{TXN_TOPIC}-{p}/00000000000000000000.log"))
            assert await txns.add_partitions(TID, pid, epoch, [("t", 0)]) == E.NOT_COORDINATOR
            assert io.fired
            assert await txns.add_partitions(TID, pid, epoch, [("t", 0)]) == E.NONE
    run(go())
