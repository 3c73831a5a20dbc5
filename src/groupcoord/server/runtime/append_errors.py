"""The Kafka error of a failed log append, and what the coordinators answer for it.

`log_error` is what `ReplicaManager.appendRecords` reports for the exception the log layer
raised (`Broker.append`'s errors); `txn_append_error` is how
`TransactionStateManager.appendTransactionToLog` turns that into the coordinator's answer:
a disk that refused the write is NOT_COORDINATOR (the partition's log directory goes
offline and leadership moves, so the client looks the coordinator up again), a missing
partition or too few replicas COORDINATOR_NOT_AVAILABLE, a batch too large
UNKNOWN_SERVER_ERROR, and any other error is answered as it is. `coordinator_append_error` is
the group coordinator's version of the same (`CoordinatorOperationExceptionHelper`, which
`GroupCoordinatorService` applies to every operation whose write failed).
"""

from __future__ import annotations

from groupcoord.apis.errors import ApiError, operation_error
from groupcoord.storage.config import (
    AppendPreconditionFailed,
    InvalidRecordError,
    KafkaStorageError,
    RecordBatchTooLargeError,
)
from groupcoord.wire.errors import ErrorCode

_TXN_APPEND_ERRORS = {
    int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION): int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
    int(ErrorCode.NOT_ENOUGH_REPLICAS): int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
    int(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND): int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
    int(ErrorCode.REQUEST_TIMED_OUT): int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
    int(ErrorCode.NOT_LEADER_OR_FOLLOWER): int(ErrorCode.NOT_COORDINATOR),
    int(ErrorCode.KAFKA_STORAGE_ERROR): int(ErrorCode.NOT_COORDINATOR),
    int(ErrorCode.MESSAGE_TOO_LARGE): int(ErrorCode.UNKNOWN_SERVER_ERROR),
    int(ErrorCode.RECORD_LIST_TOO_LARGE): int(ErrorCode.UNKNOWN_SERVER_ERROR),
}



def log_error(exc: BaseException) -> int:
    """The error code Kafka's log layer reports for the append that raised `exc`."""
    if isinstance(exc, ApiError):
        return int(exc.code)
    if isinstance(exc, KeyError):  # no such partition
        return int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if isinstance(exc, AppendPreconditionFailed):
        # Another writer moved the log: this one no longer leads the partition, as a Kafka
        # leader whose epoch was superseded answers (the group coordinator: NOT_COORDINATOR).
        return int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if isinstance(exc, RecordBatchTooLargeError):
        return int(ErrorCode.MESSAGE_TOO_LARGE)
    if isinstance(exc, InvalidRecordError):
        return int(ErrorCode.CORRUPT_MESSAGE)
    if isinstance(exc, KafkaStorageError | OSError):
        # Kafka wraps an IOException of the log in a KafkaStorageException.
        return int(ErrorCode.KAFKA_STORAGE_ERROR)
    return int(ErrorCode.UNKNOWN_SERVER_ERROR)


def txn_append_error(exc: BaseException) -> int:
    """The transaction coordinator's answer when appending to `__transaction_state` raised
    `exc` (`TransactionStateManager.appendTransactionToLog`)."""
    code = log_error(exc)
    return _TXN_APPEND_ERRORS.get(code, code)


class AppendFailed(ApiError):
    """A shard operation's append failed: `code` is the kind's answer for it, `log_code` the
    log layer's own error (what a transaction marker's writer is told, see
    `apis.errors.marker_error`)."""

    def __init__(self, code: int, log_code: int) -> None:
        super().__init__(code)
        self.log_code = log_code


def coordinator_append_error(exc: BaseException) -> int:
    """The group coordinator's answer to an operation whose append to `__consumer_offsets`
    raised `exc`: a disk error is NOT_COORDINATOR (the client looks the coordinator up
    again), a missing partition COORDINATOR_NOT_AVAILABLE."""
    return operation_error(log_error(exc))
