"""Classic groups, differentially: JoinGroup/SyncGroup/Heartbeat/LeaveGroup against Kafka 4.4.

Mirrors `org.apache.kafka.coordinator.group.GroupMetadataManager` (classic paths) and
`ClassicGroup`: member id assignment (KIP-394 MEMBER_ID_REQUIRED), rebalances, static
membership (KIP-345), and the error codes of wrong generations and unknown members.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.classic import (
    assignment,
    heartbeat,
    join,
    leave,
    send_join,
    stable_single_member,
    sync,
)
from conformance.conversation import Conversation
from conformance.differential import Scenario
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.wire.generated.join_group import JoinGroupResponse
from groupcoord.wire.generated.leave_group import LeaveGroupRequest, LeaveGroupResponse
from groupcoord.wire.generated.sync_group import SyncGroupRequest, SyncGroupResponse

Run = Callable[[Scenario], None]


def describe(c: Conversation, step: str, *groups: str) -> None:
    c.call(step, DescribeGroupsRequest(groups=list(groups)), 5, DescribeGroupsResponse)


def test_join_member_id_required_then_lifecycle(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        joined = stable_single_member(c, group)
        heartbeat(c, "heartbeat", group, joined.generation_id, joined.member_id)
        describe(c, "describe stable", group)
        leave(c, "leave", group, (joined.member_id, None))
        describe(c, "describe empty", group)
    differential(scenario)


def test_join_v3_assigns_member_id_at_once(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        joined = join(c, "join v3", group, version=3)
        sync(c, "sync v3", group, joined.generation_id, joined.member_id,
             {joined.member_id: assignment("t", [0])}, version=3)
        heartbeat(c, "heartbeat v3", group, joined.generation_id, joined.member_id, version=3)
    differential(scenario)


def test_old_versions_v0_join_sync_heartbeat_leave(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        joined = join(c, "join v0", group, version=0)
        sync(c, "sync v0", group, joined.generation_id, joined.member_id,
             {joined.member_id: assignment("t", [0])}, version=0)
        heartbeat(c, "heartbeat v0", group, joined.generation_id, joined.member_id, version=0)
        c.call("leave v0", LeaveGroupRequest(group_id=group, member_id=joined.member_id), 0,
               LeaveGroupResponse)
        describe(c, "describe", group)
    differential(scenario)


def test_second_member_triggers_rebalance(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        first = stable_single_member(c, group)
        other = c.connect("second")
        required = join(c, "m2 join", group, conn=other)
        parked = send_join(other, group, required.member_id)
        c.wait_for_state(group, "PreparingRebalance")
        heartbeat(c, "m1 heartbeat during rebalance", group, first.generation_id,
                  first.member_id)
        rejoined = join(c, "m1 rejoin", group, first.member_id)
        second = c.receive("m2 join completes", other, parked, JoinGroupResponse)
        leader_sync = sync(c, "leader sync", group, rejoined.generation_id, rejoined.member_id,
                           {rejoined.member_id: assignment("t", [0]),
                            second.member_id: assignment("t", [1])})
        assert leader_sync.error_code == 0
        sync(c, "follower sync", group, second.generation_id, second.member_id, conn=other)
        describe(c, "describe two members", group)
        heartbeat(c, "m1 old generation", group, first.generation_id, first.member_id)
    differential(scenario)


def test_follower_sync_waits_for_leader(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        first = stable_single_member(c, group)
        other = c.connect("second")
        required = join(c, "m2 join", group, conn=other)
        parked = send_join(other, group, required.member_id)
        c.wait_for_state(group, "PreparingRebalance")
        rejoined = join(c, "m1 rejoin", group, first.member_id)
        second = c.receive("m2 join completes", other, parked, JoinGroupResponse)
        follower = other.send(SyncGroupRequest(
            group_id=group, generation_id=second.generation_id, member_id=second.member_id,
            protocol_type="consumer", protocol_name="range", assignments=[]), 5)
        c.wait_for_state(group, "CompletingRebalance")
        sync(c, "leader sync", group, rejoined.generation_id, rejoined.member_id,
             {second.member_id: assignment("t", [0, 1])})
        c.receive("follower sync completes", other, follower, SyncGroupResponse)
    differential(scenario)


def test_static_member_joins_without_member_id_required(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        joined = join(c, "static join", group, instance_id="instance-a")
        sync(c, "static sync", group, joined.generation_id, joined.member_id,
             {joined.member_id: assignment("t", [0])}, instance_id="instance-a")
        heartbeat(c, "static heartbeat", group, joined.generation_id, joined.member_id,
                  instance_id="instance-a")
        describe(c, "describe static", group)
    differential(scenario)


def test_static_member_replaced_fences_old_id(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        old = join(c, "static join", group, instance_id="instance-a")
        sync(c, "static sync", group, old.generation_id, old.member_id,
             {old.member_id: assignment("t", [0])}, instance_id="instance-a")
        new = join(c, "static rejoin unknown id", group, instance_id="instance-a")
        heartbeat(c, "old id heartbeat", group, old.generation_id, old.member_id,
                  instance_id="instance-a")
        heartbeat(c, "new id heartbeat", group, new.generation_id, new.member_id,
                  instance_id="instance-a")
        sync(c, "old id sync", group, old.generation_id, old.member_id,
             instance_id="instance-a")
    differential(scenario)


def test_static_member_leave_by_instance_id(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        joined = join(c, "static join", group, instance_id="instance-a")
        sync(c, "static sync", group, joined.generation_id, joined.member_id,
             {joined.member_id: assignment("t", [0])}, instance_id="instance-a")
        leave(c, "leave unknown instance", group, ("", "instance-b"))
        leave(c, "leave by instance", group, ("", "instance-a"))
        describe(c, "describe", group)
    differential(scenario)


def test_heartbeat_errors(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        joined = stable_single_member(c, group)
        heartbeat(c, "wrong generation", group, joined.generation_id + 1, joined.member_id)
        heartbeat(c, "unknown member", group, joined.generation_id, "nobody")
        heartbeat(c, "unknown group", c.name("missing"), 1, "nobody")
        heartbeat(c, "empty group id", "", 1, "nobody")
        heartbeat(c, "fenced static id on dynamic member", group, joined.generation_id,
                  joined.member_id, instance_id="instance-x")
    differential(scenario)


def test_sync_errors(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        joined = stable_single_member(c, group)
        sync(c, "wrong generation", group, joined.generation_id + 1, joined.member_id)
        sync(c, "unknown member", group, joined.generation_id, "nobody")
        sync(c, "unknown group", c.name("missing"), 1, "nobody")
        sync(c, "protocol name mismatch", group, joined.generation_id, joined.member_id,
             protocol_name="roundrobin")
        sync(c, "protocol type mismatch", group, joined.generation_id, joined.member_id,
             protocol_type="connect")
        sync(c, "stable resync", group, joined.generation_id, joined.member_id)
    differential(scenario)


def test_join_errors(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        join(c, "empty group id", "")
        join(c, "session timeout too small", group, session_timeout_ms=1)
        join(c, "session timeout too large", group, session_timeout_ms=2_000_000)
        join(c, "unknown member id", group, "nobody")
        join(c, "no protocols", group, protocols=())
        stable_single_member(c, group)
        join(c, "other protocol type", group, protocol_type="connect")
        join(c, "no common protocol", group, protocols=("roundrobin",))
    differential(scenario)


def test_rejoin_of_stable_leader_with_same_metadata(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        joined = stable_single_member(c, group)
        rejoined = join(c, "leader rejoins", group, joined.member_id)
        sync(c, "sync new generation", group, rejoined.generation_id, rejoined.member_id,
             {rejoined.member_id: assignment("t", [0])})
        describe(c, "describe", group)
    differential(scenario)


def test_leave_group_batch_with_unknown_members(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        joined = stable_single_member(c, group)
        leave(c, "leave mixed batch", group, (joined.member_id, None), ("nobody", None))
        leave(c, "leave unknown group", c.name("missing"), ("nobody", None))
        c.call("leave v0 unknown group", LeaveGroupRequest(group_id=c.name("missing"),
                                                          member_id="nobody"), 0,
               LeaveGroupResponse)
        describe(c, "describe", group)
    differential(scenario)


def test_leave_of_member_during_rebalance(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        first = stable_single_member(c, group)
        other = c.connect("second")
        required = join(c, "m2 join", group, conn=other)
        parked = send_join(other, group, required.member_id)
        c.wait_for_state(group, "PreparingRebalance")
        leave(c, "m1 leaves", group, (first.member_id, None))
        c.receive("m2 join completes", other, parked, JoinGroupResponse)
        describe(c, "describe", group)
    differential(scenario)


def test_describe_groups_unknown_and_empty_ids(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        describe(c, "describe unknown", c.name("missing"))
        describe(c, "describe empty id", "")
        c.call("describe v0", DescribeGroupsRequest(groups=[c.name("missing")]), 0,
               DescribeGroupsResponse)
    differential(scenario)


def test_pending_member_heartbeat_and_sync(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        required = join(c, "join", group)
        heartbeat(c, "pending member heartbeat", group, 0, required.member_id)
        sync(c, "pending member sync", group, 0, required.member_id)
    differential(scenario)
