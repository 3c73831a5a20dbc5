"""Classic group request builders for the scenarios (JoinGroup/SyncGroup/Heartbeat/LeaveGroup)."""

from __future__ import annotations

import struct

from conformance.conversation import Conversation
from conformance.routing import ClientConnection, Sent
from groupcoord.wire.generated.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
)
from groupcoord.wire.generated.consumer_protocol_assignment import (
    TopicPartition as AssignedPartitions,
)
from groupcoord.wire.generated.consumer_protocol_subscription import (
    ConsumerProtocolSubscription,
)
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.wire.generated.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.wire.generated.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from groupcoord.wire.generated.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
)
from groupcoord.wire.generated.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)

JOIN_VERSION = 9
SYNC_VERSION = 5
HEARTBEAT_VERSION = 4
LEAVE_VERSION = 5
SESSION_TIMEOUT_MS = 30_000
REBALANCE_TIMEOUT_MS = 30_000


# The embedded consumer protocol starts with its int16 version (`ConsumerProtocol`), which
# the generated struct's body does not carry.
CONSUMER_PROTOCOL_VERSION = 1
_VERSION_PREFIX = struct.pack(">h", CONSUMER_PROTOCOL_VERSION)


def subscription(topics: list[str]) -> bytes:
    body = ConsumerProtocolSubscription(topics=topics, owned_partitions=[])
    return _VERSION_PREFIX + body.encode(CONSUMER_PROTOCOL_VERSION)


def assignment(topic: str, partitions: list[int]) -> bytes:
    body = ConsumerProtocolAssignment(
        assigned_partitions=[AssignedPartitions(topic=topic, partitions=partitions)])
    return _VERSION_PREFIX + body.encode(CONSUMER_PROTOCOL_VERSION)


def join_request(group: str, member_id: str = "", *, instance_id: str | None = None,
                 protocol_type: str = "consumer", protocols: tuple[str, ...] = ("range",),
                 topics: tuple[str, ...] = ("t",),
                 session_timeout_ms: int = SESSION_TIMEOUT_MS) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group, session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS, member_id=member_id,
        group_instance_id=instance_id, protocol_type=protocol_type,
        protocols=[JoinGroupRequestProtocol(name=name, metadata=subscription(list(topics)))
                   for name in protocols],
        reason="conformance")


def join(c: Conversation, step: str, group: str, member_id: str = "", *,
         version: int = JOIN_VERSION, conn: ClientConnection | None = None,
         **kwargs: object) -> JoinGroupResponse:
    return c.call(step, join_request(group, member_id, **kwargs),  # type: ignore[arg-type]
                  version, JoinGroupResponse, conn)


def send_join(conn: ClientConnection, group: str, member_id: str = "",
              **kwargs: object) -> Sent:
    return conn.send(join_request(group, member_id, **kwargs),  # type: ignore[arg-type]
                     JOIN_VERSION)


def join_new_member(c: Conversation, label: str, group: str,
                    **kwargs: object) -> JoinGroupResponse:
    """The two-step join of a dynamic member since v4: MEMBER_ID_REQUIRED, then the join."""
    first = join(c, f"{label} join", group, **kwargs)  # type: ignore[arg-type]
    return join(c, f"{label} rejoin", group, first.member_id, **kwargs)  # type: ignore[arg-type]


def sync(c: Conversation, step: str, group: str, generation: int, member_id: str,
         assignments: dict[str, bytes] | None = None, *, instance_id: str | None = None,
         protocol_name: str | None = "range", protocol_type: str | None = "consumer",
         version: int = SYNC_VERSION, conn: ClientConnection | None = None) -> SyncGroupResponse:
    request = SyncGroupRequest(
        group_id=group, generation_id=generation, member_id=member_id,
        group_instance_id=instance_id, protocol_type=protocol_type, protocol_name=protocol_name,
        assignments=[SyncGroupRequestAssignment(member_id=m, assignment=a)
                     for m, a in (assignments or {}).items()])
    return c.call(step, request, version, SyncGroupResponse, conn)


def heartbeat(c: Conversation, step: str, group: str, generation: int, member_id: str, *,
              instance_id: str | None = None, version: int = HEARTBEAT_VERSION) -> None:
    c.call(step, HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                                  group_instance_id=instance_id), version, HeartbeatResponse)


def leave(c: Conversation, step: str, group: str, *members: tuple[str, str | None],
          version: int = LEAVE_VERSION) -> None:
    request = LeaveGroupRequest(group_id=group, members=[
        MemberIdentity(member_id=m, group_instance_id=i, reason="conformance")
        for m, i in members])
    c.call(step, request, version, LeaveGroupResponse)


def stable_single_member(c: Conversation, group: str, topic: str = "t",
                         **kwargs: object) -> JoinGroupResponse:
    """One dynamic member joined and synced: the group is Stable at generation 1."""
    joined = join_new_member(c, "m1", group, **kwargs)
    sync(c, "m1 sync", group, joined.generation_id, joined.member_id,
         {joined.member_id: assignment(topic, [0])})
    return joined


def describe_groups(c: Conversation, step: str, *groups: str,
                    version: int = 5) -> DescribeGroupsResponse:
    return c.call(step, DescribeGroupsRequest(groups=list(groups)), version,
                  DescribeGroupsResponse)
