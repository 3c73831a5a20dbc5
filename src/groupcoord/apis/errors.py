"""Handler-level errors.

`ApiError(code)` raised inside a handler becomes the error code of the response (the
handler module's `error_response`, or the response's top-level `error_code`), as Kafka's
`AbstractRequest.getErrorResponse(Throwable)` does. A malformed request is not an ApiError:
it closes the connection.
"""

from __future__ import annotations

from groupcoord.wire import error_code_numbers as codes

# `CoordinatorOperationExceptionHelper.handleOperationException`, which the group coordinator
# applies to every operation that failed: storage and replication errors of the write path
# become coordinator errors the client retries (or reports) as such.
_OPERATION_ERRORS = {
    codes.UNKNOWN_TOPIC_OR_PARTITION: codes.COORDINATOR_NOT_AVAILABLE,
    codes.NOT_ENOUGH_REPLICAS: codes.COORDINATOR_NOT_AVAILABLE,
    codes.REQUEST_TIMED_OUT: codes.COORDINATOR_NOT_AVAILABLE,
    codes.NOT_LEADER_OR_FOLLOWER: codes.NOT_COORDINATOR,
    codes.KAFKA_STORAGE_ERROR: codes.NOT_COORDINATOR,
    codes.MESSAGE_TOO_LARGE: codes.UNKNOWN_SERVER_ERROR,
    codes.RECORD_LIST_TOO_LARGE: codes.UNKNOWN_SERVER_ERROR,
    codes.INVALID_FETCH_SIZE: codes.UNKNOWN_SERVER_ERROR,
}


class ApiError(Exception):
    """An error answered to the client as a Kafka error code."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or f"error code {int(code)}")
        self.code = int(code)
        self.message = message


def operation_error(code: int) -> int:
    """The group coordinator's answer for an operation that failed with `code`
    (`handleOperationException`)."""
    return _OPERATION_ERRORS.get(int(code), int(code))


# The group coordinator's errors the transaction coordinator does not expect for a marker.
_COORDINATOR_NOT_READY = frozenset({codes.COORDINATOR_NOT_AVAILABLE,
                                    codes.COORDINATOR_LOAD_IN_PROGRESS, codes.NOT_COORDINATOR})


def marker_error(code: int) -> int:
    """What the transaction coordinator hears for a marker on `__consumer_offsets` whose
    write failed with `code` (the log's error, or the group coordinator's):
    `GroupCoordinatorService.completeTransaction` passes the log's error through, and
    `KafkaApis.handleWriteTxnMarkersRequest` turns the coordinator errors the transaction
    coordinator does not expect into NOT_LEADER_OR_FOLLOWER (the coordinator is not ready)."""
    if code in _COORDINATOR_NOT_READY:
        return codes.NOT_LEADER_OR_FOLLOWER
    return int(code)
