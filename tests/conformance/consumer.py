"""KIP-848 request builders for the scenarios (ConsumerGroupHeartbeat v1, ConsumerGroupDescribe).

Since ConsumerGroupHeartbeat v1 (KIP-1082) the client makes its member id; the scenarios use
fixed ids so both brokers see the same requests.
"""

from __future__ import annotations

from conformance.conversation import Conversation, Topic
from conformance.routing import ClientConnection
from groupcoord.wire.generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)

HEARTBEAT_VERSION = 1
DESCRIBE_VERSION = 1
REBALANCE_TIMEOUT_MS = 30_000
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


def member_id(n: int) -> str:
    """A 22-character id, the shape of the Java client's `Uuid.randomUuid().toString()`."""
    return f"conformanceMember{n:05d}"


def owned(topic: Topic, *partitions: int) -> list[TopicPartitions]:
    return [TopicPartitions(topic_id=topic.topic_id, partitions=list(partitions))]


def join_request(group: str, member: str, topics: list[str] | None = None, *,
                 regex: str | None = None, instance_id: str | None = None,
                 assignor: str | None = None) -> ConsumerGroupHeartbeatRequest:
    """The first heartbeat (epoch 0): every field set, as the Java client sends it."""
    return ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, instance_id=instance_id,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        subscribed_topic_names=topics if regex is None else None,
        subscribed_topic_regex=regex, server_assignor=assignor, topic_partitions=[])


def heartbeat(c: Conversation, step: str, request: ConsumerGroupHeartbeatRequest,
              conn: ClientConnection | None = None) -> ConsumerGroupHeartbeatResponse:
    return c.call(step, request, HEARTBEAT_VERSION, ConsumerGroupHeartbeatResponse, conn)


def join(c: Conversation, step: str, group: str, member: str, topics: list[str] | None = None,
         **kwargs: str | None) -> ConsumerGroupHeartbeatResponse:
    return heartbeat(c, step, join_request(group, member, topics, **kwargs))


def beat(c: Conversation, step: str, group: str, member: str, epoch: int,
         owning: list[TopicPartitions] | None = None, *,
         instance_id: str | None = None) -> ConsumerGroupHeartbeatResponse:
    """A steady-state heartbeat: only the epoch and, when it changed, the owned partitions."""
    return heartbeat(c, step, ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, instance_id=instance_id,
        topic_partitions=owning))


def leave(c: Conversation, step: str, group: str, member: str, *,
          instance_id: str | None = None) -> ConsumerGroupHeartbeatResponse:
    epoch = STATIC_LEAVE_EPOCH if instance_id else LEAVE_EPOCH
    return beat(c, step, group, member, epoch, instance_id=instance_id)


def describe(c: Conversation, step: str, *groups: str) -> ConsumerGroupDescribeResponse:
    return c.call(step, ConsumerGroupDescribeRequest(group_ids=list(groups)), DESCRIBE_VERSION,
                  ConsumerGroupDescribeResponse)


def assigned(response: ConsumerGroupHeartbeatResponse) -> list[TopicPartitions] | None:
    """The owned-partitions field that acknowledges the response's assignment."""
    if response.assignment is None:
        return None
    return [TopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
            for tp in response.assignment.topic_partitions]
