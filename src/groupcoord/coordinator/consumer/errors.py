"""Request validation and error responses of ConsumerGroupHeartbeat
(`GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid`)."""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class HeartbeatError(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message


def error_response(error: HeartbeatError) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=error.code, error_message=error.message)


def _invalid(message: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.INVALID_REQUEST, message)


def is_blank(value: str) -> bool:
    """Kafka's `Utils.throwIfEmptyString` test: empty after Java's `String.trim`, which
    drops every leading and trailing character at or below U+0020."""
    return not value.strip("".join(map(chr, range(0x21))))


def validate(request: Any, version: int, config: GroupCoordinatorConfig) -> None:
    """Raise HeartbeatError for a request Kafka rejects before touching the group."""
    epoch = request.member_epoch
    if is_blank(request.group_id):
        raise _invalid("GroupId can't be empty.")
    if version >= 1 and is_blank(request.member_id):
        raise _invalid("MemberId can't be empty.")
    if not request.member_id and (epoch > 0 or epoch == LEAVE_EPOCH):
        raise _invalid("MemberId can't be empty.")
    if request.instance_id is not None and is_blank(request.instance_id):
        raise _invalid("InstanceId can't be empty.")
    if request.rack_id is not None and is_blank(request.rack_id):
        raise _invalid("RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise _invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first "
                           "request.")
    elif epoch == STATIC_LEAVE_EPOCH:
        if request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        raise _invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    assignor = request.server_assignor
    if assignor is not None and assignor not in config.group_consumer_assignors:
        raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {assignor} is not supported. Supported assignors: "
                             f"{', '.join(config.group_consumer_assignors)}.")
