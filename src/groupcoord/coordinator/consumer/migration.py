"""Routing of classic-protocol requests that reach a consumer group (Kafka: the
`classicGroup*ToConsumerGroup` branches of `GroupMetadataManager`).

The shard sends JoinGroup/SyncGroup/Heartbeat/LeaveGroup here when the group id names a
consumer group; the conversions themselves are `conversion`'s, which the shard gives its
consumer groups at construction.
"""

from __future__ import annotations

from groupcoord.coordinator.classic import responses
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.leave import LeavingMember
from groupcoord.coordinator.consumer import classic_members, conversion
from groupcoord.coordinator.result import OpContext, Result
from groupcoord.coordinator.shard_groups import ShardGroups
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.wire.generated.join_group import JoinGroupRequest
from groupcoord.wire.generated.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberResponse,
)
from groupcoord.wire.generated.sync_group import SyncGroupRequest

TIMER_KINDS = frozenset({classic_members.JOIN, classic_members.SYNC, conversion.DOWNGRADED})


def _fx(shard: ShardGroups, now_ms: int) -> Effects:
    return Effects(shard.config, now_ms)


def join_group(shard: ShardGroups, request: JoinGroupRequest, version: int, ctx: OpContext,
               now_ms: int) -> Result:
    fx = _fx(shard, now_ms)
    group = shard.consumer.groups[request.group_id]
    if not (shard.config.group_min_session_timeout_ms <= request.session_timeout_ms
            <= shard.config.group_max_session_timeout_ms):
        return fx.result(responses.join_error(version, ErrorCode.INVALID_SESSION_TIMEOUT,
                                              request.member_id))
    return fx.result(classic_members.join(shard.consumer, group, request, version, ctx, fx))


def sync_group(shard: ShardGroups, request: SyncGroupRequest, version: int, ctx: OpContext,
               now_ms: int) -> Result:
    fx = _fx(shard, now_ms)
    group = shard.consumer.groups[request.group_id]
    return fx.result(classic_members.sync(shard.consumer, group, request, version, fx))


def heartbeat(shard: ShardGroups, request: HeartbeatRequest, version: int, ctx: OpContext,
              now_ms: int) -> Result:
    fx = _fx(shard, now_ms)
    group = shard.consumer.groups[request.group_id]
    error = classic_members.heartbeat(shard.consumer, group, request, version, fx)
    return fx.result(HeartbeatResponse(error_code=int(error)))


def leave_group(shard: ShardGroups, request: LeaveGroupRequest, version: int, ctx: OpContext,
                now_ms: int) -> Result:
    fx = _fx(shard, now_ms)
    group = shard.consumer.groups[request.group_id]
    if version >= 3:
        leaving = [LeavingMember(m.member_id, m.group_instance_id, None)
                   for m in request.members]
    else:
        leaving = [LeavingMember(request.member_id, None, None)]
    errors = classic_members.leave(shard.consumer, group, leaving, fx)
    if version < 3:
        return fx.result(LeaveGroupResponse(error_code=errors[0]))
    return fx.result(LeaveGroupResponse(members=[
        MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                       error_code=e) for m, e in zip(leaving, errors, strict=True)]))


def on_timer(shard: ShardGroups, key: tuple, now_ms: int) -> Result:
    fx = _fx(shard, now_ms)
    if key[0] == conversion.DOWNGRADED:
        conversion.after_downgrade(shard.classic, key[1], fx)
        return fx.result()
    group = shard.consumer.groups.get(key[1])
    if group is not None:
        classic_members.on_timer(shard.consumer, group, key[0], key[2], fx)
    return fx.result()
