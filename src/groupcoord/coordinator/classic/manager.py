"""The classic groups of one shard: request entry points, timers, replay
(the classic half of Kafka's `GroupMetadataManager` and `GroupCoordinatorService` checks).
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.classic import heartbeat as heartbeat_mod
from groupcoord.coordinator.classic import leave as leave_mod
from groupcoord.coordinator.classic import loading, rebalance, responses
from groupcoord.coordinator.classic import sync as sync_mod
from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.join import join
from groupcoord.coordinator.classic.join_request import JoinArgs
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.ids import IdSource
from groupcoord.coordinator.records import group_metadata_record
from groupcoord.coordinator.result import OpContext, Result
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.heartbeat import HeartbeatResponse
from groupcoord.wire.generated.leave_group import LeaveGroupResponse, MemberResponse

S = ClassicGroupState


class ClassicGroups:
    def __init__(self, config: GroupCoordinatorConfig, ids: IdSource) -> None:
        self.config = config
        self.ids = ids
        self.groups: dict[str, ClassicGroup] = {}

    def get(self, group_id: str) -> ClassicGroup | None:
        return self.groups.get(group_id)

    # -- JoinGroup -------------------------------------------------------------------
    def join_group(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        args = JoinArgs(request, version)
        fx = Effects(self.config, now_ms)
        if not args.group_id:
            return fx.result(responses.join_error(version, ErrorCode.INVALID_GROUP_ID,
                                                  args.member_id))
        if not (self.config.group_min_session_timeout_ms <= args.session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            return fx.result(responses.join_error(version, ErrorCode.INVALID_SESSION_TIMEOUT,
                                                  args.member_id))
        group = self.groups.get(args.group_id)
        is_new = group is None
        if group is None:
            if args.member_id:
                return fx.result(responses.join_error(version, ErrorCode.UNKNOWN_MEMBER_ID,
                                                      args.member_id))
            group = ClassicGroup(args.group_id, state_timestamp_ms=now_ms)
            self.groups[args.group_id] = group
        response = join(group, args, ctx, self.ids, fx)
        if is_new and not fx.records:
            # Commit the new group to the log even when the join itself wrote nothing.
            fx.records.append(group_metadata_record(
                group.group_id, "", 0, None, None, group.state_timestamp_ms, []))
        return fx.result(response, ctx.reply_token)

    # -- SyncGroup -------------------------------------------------------------------
    def sync_group(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        fx = Effects(self.config, now_ms)
        if not request.group_id:
            return fx.result(responses.sync_response(ErrorCode.INVALID_GROUP_ID))
        if version >= 5 and (request.protocol_type is None or request.protocol_name is None):
            return fx.result(responses.sync_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        group = self.groups.get(request.group_id)
        if group is None:
            return fx.result(responses.sync_response(ErrorCode.UNKNOWN_MEMBER_ID))
        response = sync_mod.sync(group, request, version, ctx, fx)
        return fx.result(response, ctx.reply_token)

    # -- Heartbeat -------------------------------------------------------------------
    def heartbeat(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        fx = Effects(self.config, now_ms)
        group = self.groups.get(request.group_id)
        error: int
        if not request.group_id:
            error = ErrorCode.INVALID_GROUP_ID
        elif group is None:
            error = ErrorCode.UNKNOWN_MEMBER_ID
        else:
            instance_id = request.group_instance_id if version >= 3 else None
            error = heartbeat_mod.heartbeat(group, request.member_id, instance_id,
                                            request.generation_id, fx)
        return fx.result(HeartbeatResponse(error_code=int(error)))

    # -- LeaveGroup ------------------------------------------------------------------
    def leave_group(self, request: Any, version: int, ctx: OpContext, now_ms: int) -> Result:
        fx = Effects(self.config, now_ms)
        if version >= 3:
            leaving = [leave_mod.LeavingMember(m.member_id, m.group_instance_id,
                                               m.reason if version >= 5 else None)
                       for m in request.members]
        else:
            leaving = [leave_mod.LeavingMember(request.member_id, None, None)]
        group = self.groups.get(request.group_id)
        if not request.group_id:
            return fx.result(_leave_response(version, ErrorCode.INVALID_GROUP_ID, [], []))
        if group is None:
            # GroupCoordinatorService.leaveGroup: a missing group is UNKNOWN_MEMBER_ID for
            # every member named, under a top-level NONE (promoted to the top before v3).
            unknown = [int(ErrorCode.UNKNOWN_MEMBER_ID)] * len(leaving)
            return fx.result(_leave_response(version, ErrorCode.NONE, leaving, unknown))
        if group.is_in(S.DEAD):
            return fx.result(_leave_response(version, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                             [], []))
        errors = leave_mod.leave(group, leaving, fx)
        return fx.result(_leave_response(version, ErrorCode.NONE, leaving, errors))

    # -- timers ----------------------------------------------------------------------
    def on_timer(self, key: tuple, now_ms: int) -> Result:
        fx = Effects(self.config, now_ms)
        kind, group_id = key[0], key[1]
        group = self.groups.get(group_id)
        if group is None:
            return fx.result()
        if kind == "heartbeat":
            self._expire_heartbeat(group, key[2], fx)
        elif kind == "join" and group.is_in(S.PREPARING_REBALANCE):
            if group.initial_delay is not None:
                rebalance.try_complete_initial_rebalance(group, fx)
            else:
                rebalance.complete_join(group, fx)
        elif kind == "sync":
            rebalance.expire_pending_sync(group, fx)
        return fx.result()

    def _expire_heartbeat(self, group: ClassicGroup, member_id: str, fx: Effects) -> None:
        if group.is_in(S.DEAD):
            return
        if member_id in group.pending_join_members:
            fx.event(group.group_id, "member_expired", group.generation_id, member_id,
                     "pending member session timeout")
            rebalance.remove_pending_member_and_update(group, fx, member_id)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if not member.has_satisfied_heartbeat():
            fx.event(group.group_id, "member_expired", group.generation_id, member_id,
                     "session timeout", instance_id=member.group_instance_id)
            rebalance.remove_member_and_update(
                group, fx, member, f"removing member {member_id} on heartbeat expiration.")

    # -- loading -----------------------------------------------------------------------
    def replay_group_metadata(self, group_id: str, value: Any, live: bool,
                              now_ms: int) -> None:
        if value is None:
            self.groups.pop(group_id, None)
            return
        group = self.groups.get(group_id)
        if live and group is not None:
            loading.apply_live(group, value, now_ms)
        else:
            self.groups[group_id] = loading.group_from_record(group_id, value)

    def ensure_simple_group(self, group_id: str) -> None:
        """An offset commit for an unknown group makes an empty group with no protocol."""
        if group_id not in self.groups:
            self.groups[group_id] = ClassicGroup(group_id)

    def on_loaded(self, now_ms: int) -> Result:
        fx = Effects(self.config, now_ms)
        for group in self.groups.values():
            for member in group.members.values():
                rebalance.schedule_heartbeat(fx, group, member)
            if len(group.members) > self.config.group_max_size:
                rebalance.prepare_rebalance(group, fx, "Freshly-loaded group is over capacity")
        return fx.result()


def _leave_response(version: int, top_error: int, leaving: list, errors: list[int]
                    ) -> LeaveGroupResponse:
    if version < 3:
        # Single-member versions promote the member's error to the top level.
        first = next((e for e in errors if e != ErrorCode.NONE), ErrorCode.NONE)
        code = top_error if top_error != ErrorCode.NONE else first
        return LeaveGroupResponse(error_code=int(code))
    members = [MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                              error_code=int(e)) for m, e in zip(leaving, errors, strict=True)]
    return LeaveGroupResponse(error_code=int(top_error), members=members)
