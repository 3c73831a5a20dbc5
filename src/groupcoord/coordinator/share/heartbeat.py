"""ShareGroupHeartbeat processing, step by step (Kafka `GroupMetadataManager.shareGroupHeartbeat`).

Order: validate the request, find or create the group and member, write member metadata
when it changed, bump the group epoch when the subscriptions or their metadata hash
changed (or the member is new), recompute the target assignment when the group epoch is
ahead of it and `share.assignment.interval.ms` allows (KIP-1263,
`GroupMetadataManager.canComputeNextTargetAssignment`), then move the member to the target
epoch. While the interval holds the target back, the heartbeat answers with the last target
(a new member joins at its epoch, with what that target gives it) and the next heartbeat
after the interval computes the new one: there is no timer. Only records are produced; the
response is computed from the values those records will carry.

Only share-partitions whose state is initialized are assigned (Kafka 4.4). A heartbeat that
finds subscribed partitions neither initialized nor initializing writes them as initializing
(record 15, in the heartbeat's own batch) and hands back an `InitializeRequest`, which the
caller runs after the reply (`apis/share_state_init.py`); the heartbeat after it completes
bumps the group epoch (`initializedAssignmentPending`) and assigns them. So a new group's
first member joins with nothing, and the partitions arrive at a later heartbeat, spread over
every member that has joined by then.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.consumer.errors import is_blank
from groupcoord.coordinator.result import GroupEvent, OpContext, Result
from groupcoord.coordinator.share import records as rec
from groupcoord.coordinator.share import state_metadata as smd
from groupcoord.coordinator.share.group import ShareGroup, ShareMember
from groupcoord.coordinator.share.manager import ShareGroups
from groupcoord.coordinator.share.state_metadata import InitializeRequest
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.share_group_heartbeat import (
    Assignment,
    ShareGroupHeartbeatResponse,
    TopicPartitions,
)

LEAVE_EPOCH = -1
MAX_MEMBER_ID_LENGTH = 36


class HeartbeatError(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class HeartbeatReply:
    """What a heartbeat operation answers (Kafka: the response and the optional
    `InitializeShareGroupStateParameters`): the initialization runs after the reply."""

    response: ShareGroupHeartbeatResponse
    initialize: InitializeRequest | None = None


def error_response(code: int, message: str | None = None) -> ShareGroupHeartbeatResponse:
    return ShareGroupHeartbeatResponse(error_code=int(code), error_message=message)


def error_reply(code: int, message: str | None = None) -> HeartbeatReply:
    return HeartbeatReply(error_response(code, message))


def share_group_heartbeat(groups: ShareGroups, request: Any, version: int, ctx: OpContext,
                          now_ms: int, image: TopicsImage | None = None,
                          overrides: Mapping[str, str] | None = None) -> Result:
    """ShareGroupHeartbeat on the shard's share groups; a given `image` replaces theirs."""
    if image is not None:
        groups.image = image
    return ShareHeartbeat(groups, request, ctx, now_ms, overrides or {}).run()


class ShareHeartbeat:
    """One heartbeat: reads the manager's state, returns a Result."""

    def __init__(self, manager: ShareGroups, request: Any, ctx: OpContext, now_ms: int,
                 overrides: Mapping[str, str]) -> None:
        self.m = manager
        self.req = request
        self.ctx = ctx
        self.now = now_ms
        self.records: list[Any] = []
        self.events: list[GroupEvent] = []
        self.session_ms = int(overrides.get("share.session.timeout.ms",
                                            manager.session_timeout_ms))
        self.interval_ms = int(overrides.get("share.heartbeat.interval.ms",
                                             manager.heartbeat_interval_ms))
        self.assignment_interval_ms = manager.assignment_interval(overrides)

    def run(self) -> Result:
        try:
            self._validate()
            if self.req.member_epoch == LEAVE_EPOCH:
                return self._leave()
            return self._join_or_heartbeat()
        except HeartbeatError as exc:
            return Result(response=error_reply(exc.code, exc.message))

    def _validate(self) -> None:
        # `GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid`: every check
        # is an InvalidRequestException, an empty group id included, in this order.
        req = self.req
        if not req.member_id or len(req.member_id) > MAX_MEMBER_ID_LENGTH:
            # KafkaApis rejects it before the coordinator, with no error message.
            raise HeartbeatError(ErrorCode.INVALID_REQUEST)
        if is_blank(req.member_id):
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if is_blank(req.group_id):
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if req.rack_id is not None and is_blank(req.rack_id):
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if req.member_epoch == 0 and not req.subscribed_topic_names:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST,
                                 "SubscribedTopicNames must be set in first request.")
        if req.member_epoch < LEAVE_EPOCH:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")

    def _leave(self) -> Result:
        group = self.m.get(self.req.group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Share group {self.req.group_id} not found.")
        if self.req.member_id not in group.members:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, _not_a_member(self.req))
        self.m.remove_member(group, self.req.member_id, self.now, self.records,
                             self.assignment_interval_ms, self.events,
                             "the member left the group")
        response = ShareGroupHeartbeatResponse(member_id=self.req.member_id,
                                               member_epoch=LEAVE_EPOCH,
                                               heartbeat_interval_ms=0)
        return Result(records=self.records, response=HeartbeatReply(response),
                      events=self.events)

    def _member(self, group: ShareGroup | None) -> tuple[ShareMember, bool]:
        req = self.req
        if group is None and req.member_epoch != 0:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Share group {req.group_id} not found.")
        member = group.members.get(req.member_id) if group is not None else None
        # `throwIfShareGroupIsFull` runs before the member lookup: any id the full group
        # does not know is refused, whatever its epoch.
        if member is None and group is not None and len(group.members) >= self.m.max_size:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED)
        if member is None:
            if req.member_epoch != 0:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, _not_a_member(req))
            return ShareMember(req.member_id), True
        epoch = req.member_epoch
        if epoch != 0 and epoch > member.member_epoch:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, (
                f"The share group member has a greater member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must "
                "abandon all its partitions and rejoin."))
        if epoch != 0 and epoch < member.member_epoch and \
                epoch != member.previous_member_epoch:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, (
                f"The share group member has a smaller member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}), and it does not "
                f"match the previous member epoch ({member.previous_member_epoch}). The "
                "member must abandon all its partitions and rejoin."))
        return member, False

    def _join_or_heartbeat(self) -> Result:
        req, gid = self.req, self.req.group_id
        group = self.m.get(gid)
        member, is_new = self._member(group)
        group = group or ShareGroup(gid)
        names = member.subscribed_topic_names if req.subscribed_topic_names is None \
            else tuple(sorted(set(req.subscribed_topic_names)))
        updated = ShareMember(
            req.member_id, member.member_epoch, member.previous_member_epoch,
            req.rack_id if req.rack_id is not None else member.rack_id,
            self.ctx.client_id, self.ctx.client_host, names, member.assigned)
        if is_new or updated.canonical()[2:6] != member.canonical()[2:6]:
            self.records.append(rec.member_metadata(gid, req.member_id, updated.rack_id,
                                                    updated.client_id, updated.client_host,
                                                    names))
        members = dict(group.members)
        members[req.member_id] = updated
        all_names = {n for m in members.values() for n in m.subscribed_topic_names}
        hash_ = self.m.metadata_hash(all_names)
        group_epoch = group.group_epoch
        resubscribed = names != member.subscribed_topic_names
        bump = is_new or resubscribed
        reason = ("member joined" if is_new else "member subscription changed"
                  if resubscribed else "topic metadata changed")
        if not bump and group.assignment_epoch >= group_epoch \
                and self.m.initialized_assignment_pending(group):
            # Partitions initialized since the last target are assigned by a new one.
            bump, reason = True, "share partitions initialized"
        if bump or hash_ != group.metadata_hash:
            group_epoch += 1
            self.records.append(rec.group_metadata(gid, group_epoch, hash_))
            self.events.append(GroupEvent(gid, "group_epoch_bumped", req.member_id, reason,
                                          group_epoch, self.now, {"protocol": "share"}))
        target = group.target
        assignment_epoch = group.assignment_epoch
        if group_epoch > assignment_epoch and self.m.can_compute_target(
                group, self.assignment_interval_ms, self.now):
            target = self.m.target_records(group, members, group_epoch, self.now, self.records)
            assignment_epoch = group_epoch
        result = self._reconcile(updated, target, assignment_epoch, is_new or resubscribed)
        result.response = HeartbeatReply(result.response,
                                         self._initialize(group, group_epoch, all_names))
        return result

    def _initialize(self, group: ShareGroup, group_epoch: int,
                    names: set[str]) -> InitializeRequest | None:
        """`maybeCreateInitializeShareGroupStateRequest`: subscribed partitions neither
        initialized nor recently initializing are written as initializing (in this
        heartbeat's batch) and returned, to be initialized after the reply."""
        if not names or not self.m.image.by_id:
            return None
        md = group.state_metadata
        change = smd.change_map(md, names, self.m.image, self.now,
                                self.m.initialize_retry_interval_ms)
        if not change:
            return None
        self.records.append(smd.record(group.group_id, smd.with_initializing(md, change)))
        return smd.initialize_request(group.group_id, group_epoch, md, change)

    def _reconcile(self, member: ShareMember, target: Mapping[str, Mapping[bytes, frozenset[int]]],
                   assignment_epoch: int, refresh: bool) -> Result:
        """Move the member to the target epoch (`ShareGroupAssignmentBuilder.build`).
        `refresh` (a new member, or `hasSubscriptionChanged`) refilters its assignment at the
        same epoch, so a member drops an unsubscribed topic while the next target is held
        back by the assignment interval."""
        req, gid = self.req, self.req.group_id
        epoch, assigned = member.member_epoch, member.assigned
        if refresh or epoch != assignment_epoch or req.member_epoch == 0:
            subscribed = {self.m.image.topic_id(n) for n in member.subscribed_topic_names}
            assigned = {t: p for t, p in target.get(req.member_id, {}).items()
                        if t in subscribed}
            if epoch == 0 or epoch != assignment_epoch or assigned != member.assigned:
                previous = epoch if epoch != assignment_epoch else member.previous_member_epoch
                self.records.append(rec.current_assignment(gid, req.member_id, assignment_epoch,
                                                           previous, assigned))
            epoch = assignment_epoch
        response = ShareGroupHeartbeatResponse(
            member_id=req.member_id, member_epoch=epoch, heartbeat_interval_ms=self.interval_ms)
        if req.member_epoch == 0 or req.subscribed_topic_names is not None \
                or assigned != member.assigned:
            response.assignment = Assignment(topic_partitions=[
                TopicPartitions(topic_id=t, partitions=sorted(assigned[t]))
                for t in sorted(assigned)])
        timer = self.m.session_timer(gid, req.member_id, self.now, self.session_ms)
        return Result(records=self.records, response=response, timers=[timer],
                      events=self.events)


def _not_a_member(req: Any) -> str:
    """`ShareGroup.getOrMaybeCreateMember`'s message for an unknown member."""
    return f"Member {req.member_id} is not a member of group {req.group_id}."
