"""A manual-clock runtime for driving a GroupCoordinatorShard in tests.

It does what the server runtime does, synchronously: runs an operation, "appends" its
records to an in-memory log, replays them, applies timer operations, and fires due timers
when the clock is advanced. No sleeps, no real time.
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.classic.consumer_protocol import encode_subscription
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.ids import SequentialIds
from groupcoord.coordinator.result import (
    CancelTimer,
    GroupEvent,
    Offload,
    OpContext,
    Reply,
    Result,
    ScheduleTimer,
)
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.logformat.coordinator_records import decode_record
from groupcoord.wire.generated.heartbeat import HeartbeatRequest
from groupcoord.wire.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.wire.generated.leave_group import LeaveGroupRequest, MemberIdentity
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.wire.generated.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from groupcoord.wire.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment

GROUP = "grp"


class Harness:
    def __init__(self, config: GroupCoordinatorConfig | None = None,
                 now_ms: int = 1_000_000) -> None:
        self.config = config or GroupCoordinatorConfig()
        self.ids = SequentialIds()
        self.shard = GroupCoordinatorShard(0, self.config, self.ids)
        self.now = now_ms
        self.log: list[Any] = []
        self.timers: dict[tuple, int] = {}
        self.replies: dict[int, Any] = {}
        self.events: list[GroupEvent] = []
        # Offloaded work not run yet, newest per key (the runtime supersedes by key).
        self.offloads: dict[tuple, Offload] = {}
        self.next_token = 1
        self.apply(self.shard.on_loaded(self.now))

    # -- runtime -----------------------------------------------------------------------
    def apply(self, result: Result) -> Result:
        for rec in result.records:
            # Like the runtime: the live shard replays the very objects it produced.
            self.log.append(rec)
            self.shard.replay(rec)
        for reply in result.deferred:
            assert isinstance(reply, Reply)
            self.replies[reply.token] = reply.response
        for op in result.timers:
            if isinstance(op, ScheduleTimer):
                self.timers[op.key] = op.deadline_ms
            else:
                assert isinstance(op, CancelTimer)
                self.timers.pop(op.key, None)
        self.events.extend(result.events)
        for task in result.offloads:
            self.offloads[task.key] = task
        return result

    def run_offloads(self) -> list[Result | None]:
        """Run the pending offloaded work as the runtime does: compute, then apply as an
        operation at the current time; the applied results in order."""
        pending, self.offloads = list(self.offloads.values()), {}
        out = []
        for task in pending:
            applied = task.apply(self.shard, task.compute(), self.now)
            if applied is not None:
                self.apply(applied)
            out.append(applied)
        return out

    def call(self, method: str, request: Any, version: int, client_id: str = "client",
             ) -> tuple[int, Result]:
        token = self.next_token
        self.next_token += 1
        ctx = OpContext(client_id, "/127.0.0.1", token)
        result = getattr(self.shard, method)(request, version, ctx, self.now)
        self.apply(result)
        if result.response is not None:
            self.replies[token] = result.response
        return token, result

    def advance(self, ms: int) -> None:
        """Move the clock, firing due timers in deadline order."""
        target = self.now + ms
        while True:
            due = [(d, k) for k, d in self.timers.items() if d <= target]
            if not due:
                break
            deadline, key = min(due, key=lambda x: (x[0], str(x[1])))
            del self.timers[key]
            self.now = max(self.now, deadline)
            self.apply(self.shard.on_timer(key, self.now))
        self.now = target

    def reply(self, token: int) -> Any:
        return self.replies.get(token)

    def fresh_replay(self) -> GroupCoordinatorShard:
        """A new shard loaded from the log's bytes, as at start-up."""
        # The id source carries on, so ids handed out after a restart stay unique.
        other = GroupCoordinatorShard(0, self.config, self.ids)
        for rec in self.log:
            other.replay(decode_record(rec.key_bytes(), rec.value_bytes()))
        return other

    def restart(self, config: GroupCoordinatorConfig | None = None) -> None:
        """Reload the shard from the log's bytes, as a broker restart does, optionally
        under changed settings; soft state (timers) is re-derived by `on_loaded`."""
        if config is not None:
            self.config = config
        self.shard = self.fresh_replay()
        self.timers.clear()
        self.apply(self.shard.on_loaded(self.now))

    # -- requests ----------------------------------------------------------------------
    def join(self, member_id: str = "", version: int = 9, group_id: str = GROUP,
             instance_id: str | None = None, topics: tuple[str, ...] = ("t",),
             protocols: list[tuple[str, bytes]] | None = None, session_ms: int = 10_000,
             rebalance_ms: int = 30_000, client_id: str = "client",
             protocol_type: str = "consumer", reason: str | None = None) -> tuple[int, Result]:
        if protocols is None:
            protocols = [("range", encode_subscription(list(topics)))]
        req = JoinGroupRequest(
            group_id=group_id, session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms,
            member_id=member_id, group_instance_id=instance_id, protocol_type=protocol_type,
            protocols=[JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
            reason=reason)
        return self.call("join_group", req, version, client_id)

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
             version: int = 5, group_id: str = GROUP, instance_id: str | None = None,
             protocol_type: str | None = "consumer", protocol_name: str | None = "range"
             ) -> tuple[int, Result]:
        req = SyncGroupRequest(
            group_id=group_id, generation_id=generation, member_id=member_id,
            group_instance_id=instance_id, protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=[SyncGroupRequestAssignment(member_id=m, assignment=a)
                         for m, a in (assignments or {}).items()])
        return self.call("sync_group", req, version)

    def heartbeat(self, member_id: str, generation: int, version: int = 4,
                  group_id: str = GROUP, instance_id: str | None = None) -> int:
        req = HeartbeatRequest(group_id=group_id, generation_id=generation, member_id=member_id,
                               group_instance_id=instance_id)
        _, result = self.call("heartbeat", req, version)
        return result.response.error_code

    def leave(self, members: list[tuple[str, str | None]], version: int = 5,
              group_id: str = GROUP) -> Any:
        if version >= 3:
            req = LeaveGroupRequest(group_id=group_id, members=[
                MemberIdentity(member_id=m, group_instance_id=i, reason="bye")
                for m, i in members])
        else:
            req = LeaveGroupRequest(group_id=group_id, member_id=members[0][0])
        _, result = self.call("leave_group", req, version)
        return result.response

    def commit(self, offsets: dict[tuple[str, int], int], member_id: str = "",
               generation: int = -1, version: int = 9, group_id: str = GROUP,
               instance_id: str | None = None, metadata: str | None = "",
               retention_ms: int = -1) -> Any:
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (t, p), off in offsets.items():
            by_topic.setdefault(t, []).append(OffsetCommitRequestPartition(
                partition_index=p, committed_offset=off, committed_metadata=metadata))
        req = OffsetCommitRequest(
            group_id=group_id, generation_id_or_member_epoch=generation, member_id=member_id,
            group_instance_id=instance_id, retention_time_ms=retention_ms,
            topics=[OffsetCommitRequestTopic(name=t, partitions=ps)
                    for t, ps in by_topic.items()])
        _, result = self.call("offset_commit", req, version)
        return result.response

    def commit_errors(self, *args: Any, **kw: Any) -> dict[tuple[str, int], int]:
        resp = self.commit(*args, **kw)
        return {(t.name, p.partition_index): p.error_code
                for t in resp.topics for p in t.partitions}

    def fetch(self, topics: dict[str, list[int]] | None, version: int = 7,
              group_id: str = GROUP) -> dict[tuple[str, int], tuple[int, int]]:
        req = OffsetFetchRequest(
            group_id=group_id,
            topics=None if topics is None else [
                OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in topics.items()])
        _, result = self.call("offset_fetch", req, version)
        return {(t.name, p.partition_index): (p.committed_offset, p.error_code)
                for t in result.response.topics for p in t.partitions}

    # -- composite ---------------------------------------------------------------------
    def stable_group(self, n: int = 2, version: int = 9) -> list[str]:
        """Bring `n` dynamic members to a Stable generation; returns member ids."""
        ids = []
        tokens = []
        for i in range(n):
            _, r = self.join(version=version, client_id=f"c{i}")
            mid = r.response.member_id
            if r.response.error_code == 79:  # MEMBER_ID_REQUIRED
                t, _ = self.join(member_id=mid, version=version, client_id=f"c{i}")
                tokens.append(t)
            ids.append(mid)
        group = self.shard.classic.get(GROUP)
        while group.state.value == "PreparingRebalance":
            self.advance(self.config.group_initial_rebalance_delay_ms)
        leader = group.leader_id
        gen = group.generation_id
        for mid in ids:
            if mid != leader:
                self.sync(mid, gen)
        self.sync(leader, gen, {m: f"a-{m}".encode() for m in ids})
        return ids
