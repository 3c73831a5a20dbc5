"""StreamsGroupHeartbeat on one shard, following the streams cases of Kafka's
`GroupMetadataManagerTest` and `GroupCoordinatorServiceTest` (4.4): request validation
(`throwIfStreamsGroupHeartbeatRequestIsInvalid`), the join records, topology and internal
topic statuses, epochs and fencing (`throwIfStreamsGroupMemberEpochIsInvalid`), leaving,
static membership and the timers."""

from __future__ import annotations

from typing import Any

import pytest
from sg_harness import (
    CHANGELOG,
    GROUP,
    INPUT,
    REPARTITION,
    StreamsHarness,
    ids,
    word_count_topology,
)

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.streams import records as rec
from groupcoord.coordinator.streams.group import StreamsGroupState
from groupcoord.coordinator.streams.member import MemberState
from groupcoord.logformat.generated.streams_group_metadata import StreamsGroupMetadataKey
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import offset_commit as oc
from groupcoord.wire.generated import streams_group_heartbeat as hb
from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest


def ready(partitions: int = 3, **kw: Any) -> StreamsHarness:
    h = StreamsHarness(**kw)
    h.create_topic(INPUT, partitions)
    h.create_topic(REPARTITION, partitions)
    h.create_topic(CHANGELOG, partitions)
    return h


def stable(h: StreamsHarness, member_id: str, response: Any) -> Any:
    """Heartbeat again reporting exactly the tasks the last response gave."""
    return h.streams_heartbeat(member_id, response.member_epoch,
                               active=ids(response.active_tasks) or {},
                               standby=ids(response.standby_tasks) or {},
                               warmup=ids(response.warmup_tasks) or {}).response


@pytest.mark.parametrize(("change", "message"), [
    ({"member_id": ""}, "MemberId can't be empty."),
    ({"group_id": " "}, "GroupId can't be empty."),
    ({"instance_id": ""}, "InstanceId can't be empty."),
    ({"rack_id": ""}, "RackId can't be empty."),
    ({"rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must be provided in first request."),
    ({"active_tasks": None}, "ActiveTasks must be empty when (re-)joining."),
    ({"standby_tasks": [hb.TaskIds(subtopology_id="0", partitions=[0])]},
     "StandbyTasks must be empty when (re-)joining."),
    ({"topology": None}, "Topology must be non-null when (re-)joining."),
    ({"member_epoch": -3}, "MemberEpoch is -3, but must be greater than or equal to -2."),
    ({"member_epoch": 5, "warmup_tasks": None},
     "If one task-type is non-null, all must be non-null."),
])
def test_invalid_requests(change: dict[str, Any], message: str) -> None:
    """`GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid`."""
    h = ready()
    fields: dict[str, Any] = {
        "group_id": GROUP, "member_id": "m1", "member_epoch": 0, "rebalance_timeout_ms": 1000,
        "topology": hb.Topology(epoch=0, subtopologies=[]), "active_tasks": [],
        "standby_tasks": [], "warmup_tasks": []}
    fields.update(change)
    _, result = h.call("streams_group_heartbeat", hb.StreamsGroupHeartbeatRequest(**fields), 1)
    response = result.response.response
    assert (response.error_code, response.error_message) == (ErrorCode.INVALID_REQUEST, message)
    assert result.records == []


def test_changelog_with_a_partition_count_is_an_invalid_topology() -> None:
    """`GroupCoordinatorService.throwIfInvalidTopology`."""
    h = ready()
    topology = hb.Topology(epoch=0, subtopologies=[hb.Subtopology(
        subtopology_id="0", source_topics=[INPUT],
        state_changelog_topics=[hb.TopicInfo(name="chg", partitions=3)])])
    response = h.streams_heartbeat("m1", 0, topology=topology).response
    assert response.error_code == ErrorCode.STREAMS_INVALID_TOPOLOGY
    assert response.error_message == \
        "Changelog topic chg must have an undefined partition count, but it is set to 3."


def test_join_writes_kafkas_records_in_order() -> None:
    """`testStreamsGroupHeartbeat...`: member, topology, epoch bump, target, current."""
    h = ready()
    result = h.streams_heartbeat("m1", 0)
    response = result.response
    assert response.error_code == 0 and response.member_epoch == 2
    assert response.status == []
    assert ids(response.active_tasks) == {"0": [0, 1, 2], "1": [0, 1, 2]}
    types = [type(r.key).__name__ for r in h.log]
    assert types == ["StreamsGroupMemberMetadataKey", "StreamsGroupTopologyKey",
                     "StreamsGroupMetadataKey", "StreamsGroupTargetAssignmentMemberKey",
                     "StreamsGroupTargetAssignmentMetadataKey",
                     "StreamsGroupCurrentMemberAssignmentKey"]
    meta = h.log[2].value
    assert (meta.epoch, meta.validated_topology_epoch) == (2, 0)
    assert [(c.key, c.value) for c in meta.last_assignment_configs] == \
        [("num.standby.replicas", "0")]
    current = h.log[5].value
    assert (current.member_epoch, current.previous_member_epoch, current.state) == (2, 0, 1)
    assert [t.assignment_epochs for t in current.active_tasks] == [[2, 2, 2], [2, 2, 2]]
    assert h.group().state() == StreamsGroupState.STABLE


def test_missing_source_topics_status_and_not_ready_group() -> None:
    h = StreamsHarness()
    response = h.streams_heartbeat("m1", 0).response
    assert [(s.status_code, s.status_detail) for s in response.status] == \
        [(1, f"Source topics {INPUT} are missing.")]
    assert ids(response.active_tasks) == {}
    assert h.group().state() == StreamsGroupState.NOT_READY


def test_missing_internal_topics_then_created() -> None:
    """MISSING_INTERNAL_TOPICS carries the topics to create; once created (a topics image
    change), the next heartbeat validates the topology and assigns the tasks."""
    h = StreamsHarness()
    h.create_topic(INPUT, 2)
    result = h.streams_heartbeat("m1", 0)
    assert [s.status_code for s in result.response.status] == [3]
    assert sorted(result.topics_to_create) == [CHANGELOG, REPARTITION]
    h.create_internal(result)
    again = stable(h, "m1", result.response)
    assert again.status == []
    assert ids(again.active_tasks) == {"0": [0, 1], "1": [0, 1]}
    assert h.group().validated_topology_epoch == 0


def test_unknown_group_and_member() -> None:
    h = ready()
    response = h.streams_heartbeat("m1", 3, active={}, standby={}, warmup={}).response
    assert (response.error_code, response.error_message) == \
        (ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {GROUP} not found.")
    h.streams_heartbeat("m1", 0)
    response = h.streams_heartbeat("m2", 3, active={}, standby={}, warmup={}).response
    assert (response.error_code, response.error_message) == \
        (ErrorCode.UNKNOWN_MEMBER_ID, f"Member m2 is not a member of group {GROUP}.")


def test_fenced_member_epochs() -> None:
    """`throwIfStreamsGroupMemberEpochIsInvalid`: ahead is fenced; behind is fenced unless
    it is the previous epoch with only tasks still assigned."""
    h = ready()
    first = h.streams_heartbeat("m1", 0).response
    ahead = h.streams_heartbeat("m1", first.member_epoch + 1, active={}, standby={},
                                warmup={}).response
    assert ahead.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    h.streams_heartbeat("m2", 0, process="p2")
    moved = stable(h, "m1", first)
    assert moved.member_epoch == first.member_epoch
    behind = h.streams_heartbeat("m1", first.member_epoch - 1, active={"0": [0]}, standby={},
                                 warmup={}).response
    assert behind.error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_revoke_before_assign() -> None:
    """`CurrentAssignmentBuilder`: the old owner revokes (UNREVOKED_TASKS, same epoch)
    and the new member waits for the tasks (UNRELEASED_TASKS) until they are released."""
    h = ready()
    m1 = h.streams_heartbeat("m1", 0).response
    m2 = h.streams_heartbeat("m2", 0, process="p2").response
    assert ids(m2.active_tasks) == {}
    assert h.group().members["m2"].state == MemberState.UNRELEASED_TASKS
    m1b = stable(h, "m1", m1)
    assert m1b.member_epoch == m1.member_epoch
    kept = ids(m1b.active_tasks)
    assert kept is not None and sum(map(len, kept.values())) == 3
    assert h.group().members["m1"].state == MemberState.UNREVOKED_TASKS
    assert h.group().state() == StreamsGroupState.RECONCILING
    m1c = stable(h, "m1", m1b)
    assert m1c.member_epoch == m2.member_epoch
    m2b = stable(h, "m2", m2)
    mine = ids(m2b.active_tasks)
    assert mine is not None and sum(map(len, mine.values())) == 3
    assert h.group().state() == StreamsGroupState.STABLE
    assert h.shard.snapshot() == h.fresh_replay().snapshot()


def test_standby_replicas_from_the_broker_config() -> None:
    h = ready(config=GroupCoordinatorConfig(group_streams_initial_rebalance_delay_ms=0,
                                            group_streams_assignment_interval_ms=0,
                                            group_streams_num_standby_replicas=1))
    m1 = h.streams_heartbeat("m1", 0).response
    m2 = h.streams_heartbeat("m2", 0, process="p2").response
    for _ in range(3):
        m1 = stable(h, "m1", m1)
        m2 = stable(h, "m2", m2)
    g = h.group()
    standby = [set(g.members[m].assigned.standby.get("1", ())) for m in ("m1", "m2")]
    active = [set(g.members[m].assigned.active.get("1", {})) for m in ("m1", "m2")]
    assert standby[0] | standby[1] == {0, 1, 2}
    assert not standby[0] & active[0] and not standby[1] & active[1]
    assert "0" not in g.members["m1"].assigned.standby  # stateless: no standby


def test_leave_removes_member_and_bumps_epoch() -> None:
    """`streamsGroupLeave` -> `streamsGroupFenceMember`."""
    h = ready()
    m1 = h.streams_heartbeat("m1", 0).response
    before = len(h.log)
    response = h.streams_heartbeat("m1", -1).response
    assert (response.member_id, response.member_epoch) == ("m1", -1)
    written = h.log[before:]
    assert [type(r.key).__name__ for r in written] == [
        "StreamsGroupCurrentMemberAssignmentKey", "StreamsGroupTargetAssignmentMemberKey",
        "StreamsGroupMemberMetadataKey", "StreamsGroupMetadataKey",
        "StreamsGroupTargetAssignmentMetadataKey"]
    assert [r.value is None for r in written] == [True, True, True, False, False]
    assert written[3].value.epoch == m1.member_epoch + 1
    assert (written[4].value.assignment_epoch, written[4].value.assignment_timestamp) == \
        (m1.member_epoch + 1, 0)
    assert h.group().state() == StreamsGroupState.EMPTY


def test_static_member_rejoins_under_new_id_and_keeps_its_tasks() -> None:
    h = ready()
    first = h.streams_heartbeat("old", 0, instance_id="i1").response
    tasks = ids(first.active_tasks)
    left = h.streams_heartbeat("old", -2, instance_id="i1").response
    assert left.member_epoch == -2
    before = len(h.log)
    back = h.streams_heartbeat("new", 0, instance_id="i1").response
    # `replaceStreamsMember`: the old member's tombstones, then the new one's records.
    assert [(type(r.key).__name__[len("StreamsGroup"):-len("Key")], r.key.member_id,
             r.value is None) for r in h.log[before:before + 6]] == [
        ("CurrentMemberAssignment", "old", True), ("TargetAssignmentMember", "old", True),
        ("MemberMetadata", "old", True), ("MemberMetadata", "new", False),
        ("TargetAssignmentMember", "new", False), ("CurrentMemberAssignment", "new", False)]
    assert not any(type(r.key).__name__ == "StreamsGroupMetadataKey" for r in h.log[before:])
    assert back.error_code == 0
    assert ids(back.active_tasks) == tasks
    assert set(h.group().members) == {"new"}
    assert h.group().group_epoch == 2  # no epoch-relevant change: no bump


def test_static_instance_still_in_use() -> None:
    h = ready()
    h.streams_heartbeat("old", 0, instance_id="i1")
    response = h.streams_heartbeat("new", 0, instance_id="i1").response
    assert response.error_code == ErrorCode.UNRELEASED_INSTANCE_ID


def test_session_timeout_fences_member() -> None:
    h = ready()
    h.streams_heartbeat("m1", 0)
    h.streams_heartbeat("m2", 0, process="p2")
    h.advance(45_000)
    assert h.shard.streams.groups[GROUP].members == {}


def test_rebalance_timeout_fences_member_that_does_not_revoke() -> None:
    h = ready()
    m1 = h.streams_heartbeat("m1", 0, rebalance_timeout_ms=10_000).response
    m2 = h.streams_heartbeat("m2", 0, process="p2").response
    stable(h, "m1", m1)  # now UNREVOKED_TASKS, never reports the revocation
    for _ in range(3):
        h.advance(4_000)
        m2 = stable(h, "m2", m2)
    assert set(h.group().members) == {"m2"}


def test_initial_rebalance_delay() -> None:
    """The first join of an empty group arms `group.streams.initial.rebalance.delay.ms`;
    until it fires the assignment is delayed (status 5)."""
    h = ready(config=GroupCoordinatorConfig())
    first = h.streams_heartbeat("m1", 0).response
    assert [s.status_code for s in first.status] == [5]
    assert ids(first.active_tasks) == {}
    h.advance(3_000)
    after = stable(h, "m1", first)
    assert ids(after.active_tasks) == {"0": [0, 1, 2], "1": [0, 1, 2]}


def test_topology_updates_are_not_supported() -> None:
    h = ready()
    h.streams_heartbeat("m1", 0)
    other = hb.Topology(epoch=0, subtopologies=[hb.Subtopology(subtopology_id="0",
                                                               source_topics=[INPUT])])
    response = h.streams_heartbeat("m2", 0, topology=other).response
    assert (response.error_code, response.error_message) == \
        (ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet.")


def test_shutdown_application_is_broadcast() -> None:
    h = ready()
    m1 = h.streams_heartbeat("m1", 0).response
    m2 = h.streams_heartbeat("m2", 0, process="p2").response
    _, result = h.call("streams_group_heartbeat", hb.StreamsGroupHeartbeatRequest(
        group_id=GROUP, member_id="m1", member_epoch=m1.member_epoch,
        shutdown_application=True), 1)
    assert [s.status_code for s in result.response.response.status] == [4]
    other = h.streams_heartbeat("m2", m2.member_epoch).response
    assert [s.status_code for s in other.status] == [4]


def test_group_of_another_kind() -> None:
    h = ready()
    h.call("consumer_group_heartbeat", ConsumerGroupHeartbeatRequest(
        group_id="taken", member_id="c1", member_epoch=0, rebalance_timeout_ms=1000,
        subscribed_topic_names=[INPUT], topic_partitions=[]), 1)
    response = h.streams_heartbeat("m1", 0, group_id="taken").response
    assert (response.error_code, response.error_message) == \
        (ErrorCode.GROUP_ID_NOT_FOUND, "Group taken is not a streams group.")


def test_replay_rebuilds_the_group_after_restart() -> None:
    h = ready()
    m1 = h.streams_heartbeat("m1", 0).response
    m2 = h.streams_heartbeat("m2", 0, process="p2").response
    stable(h, "m1", stable(h, "m1", m1))
    stable(h, "m2", m2)
    before = h.shard.snapshot()
    h.restart()
    assert h.shard.snapshot() == before
    assert sorted(k for k in h.timers if k[0] == "streams-session") == \
        [("streams-session", GROUP, "m1"), ("streams-session", GROUP, "m2")]


def test_metadata_tombstone_deletes_group_on_replay() -> None:
    h = ready()
    h.streams_heartbeat("m1", 0)
    h.streams_heartbeat("m1", -1)
    h.apply(h.shard.delete_groups([GROUP], h.now))
    assert GROUP not in h.shard.streams.groups
    assert h.log[-1].key == rec.topology_tombstone(GROUP).key
    assert any(r.key == StreamsGroupMetadataKey(group_id=GROUP) and r.value is None
               for r in h.log)


def test_offsets_of_an_empty_group_expire_and_the_group_goes() -> None:
    """`StreamsGroup.offsetExpirationCondition` (commit time) and `isSubscribedToTopic`
    (nothing while empty); then `maybeDeleteGroup`."""
    h = ready()
    joined = h.streams_heartbeat("m1", 0).response
    _, result = h.call("offset_commit", oc.OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=joined.member_epoch, member_id="m1",
        topics=[oc.OffsetCommitRequestTopic(name=INPUT, partitions=[
            oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=5,
                                            committed_leader_epoch=-1, committed_metadata="")])]),
        9)
    assert result.response.topics[0].partitions[0].error_code == 0
    retention = h.config.offsets_retention_ms
    h.advance(retention + 1)  # the member's session expired long ago: the group is Empty
    h.apply(h.shard.cleanup_expired_offsets(h.now))
    assert h.shard.offsets.group(GROUP) == {}
    assert GROUP not in h.shard.streams.groups


def test_offset_commit_needs_v9_and_the_member_epoch() -> None:
    """`StreamsGroup.validateOffsetCommit`."""
    h = ready()
    joined = h.streams_heartbeat("m1", 0).response

    def commit(epoch: int, version: int, member: str = "m1") -> int:
        _, result = h.call("offset_commit", oc.OffsetCommitRequest(
            group_id=GROUP, generation_id_or_member_epoch=epoch, member_id=member,
            topics=[oc.OffsetCommitRequestTopic(name=INPUT, partitions=[
                oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                committed_leader_epoch=-1,
                                                committed_metadata="")])]), version)
        return int(result.response.topics[0].partitions[0].error_code)
    assert commit(joined.member_epoch, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert commit(joined.member_epoch + 1, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit(joined.member_epoch, 9, "nobody") == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(joined.member_epoch, 9) == ErrorCode.NONE


def test_missing_client_tags_from_version_1() -> None:
    """`group.streams.rack.aware.assignment.tags`: recorded in the assignment configs; a
    member without a required tag hears MISSING_CLIENT_TAGS, but only at v1."""
    h = ready(config=GroupCoordinatorConfig(group_streams_initial_rebalance_delay_ms=0,
                                            group_streams_assignment_interval_ms=0,
                                            group_streams_rack_aware_assignment_tags=("zone",
                                                                                      "rack")))
    v1 = h.streams_heartbeat("m1", 0).response
    assert [(s.status_code, s.status_detail) for s in v1.status] == [
        (6, ("Missing required client tags for rack-aware standby assignment: [zone, rack]. "
             "Configure them via 'client.tag.<tagKey>' in your Streams config."))]
    meta = next(r.value for r in h.log if type(r.key).__name__ == "StreamsGroupMetadataKey")
    assert [(c.key, c.value) for c in meta.last_assignment_configs] == \
        [("num.standby.replicas", "0"), ("rack.aware.assignment.tags", "zone,rack")]
    v0 = h.streams_heartbeat("m2", 0, process="p2", version=0).response
    assert v0.status == []


def test_rack_aware_tags_must_not_repeat() -> None:
    with pytest.raises(ValueError, match="duplicate tag keys"):
        GroupCoordinatorConfig.from_properties(
            {"group.streams.rack.aware.assignment.tags": "zone,zone"})


def test_interactive_query_endpoints() -> None:
    """`EndpointToPartitionsManager`: each member with an endpoint maps to the input
    partitions of its tasks (active; standby and warm-up as standby), sent when the
    member's endpoint epoch is behind the group's."""
    h = ready(config=GroupCoordinatorConfig(group_streams_initial_rebalance_delay_ms=0,
                                            group_streams_assignment_interval_ms=0,
                                            group_streams_num_standby_replicas=1))
    _, result = h.call("streams_group_heartbeat", hb.StreamsGroupHeartbeatRequest(
        group_id=GROUP, member_id="m1", member_epoch=0, rebalance_timeout_ms=1000,
        topology=word_count_topology(), active_tasks=[], standby_tasks=[], warmup_tasks=[],
        process_id="p1", user_endpoint=hb.Endpoint(host="h1", port=7001)), 1)
    first = result.response.response
    # The group was created by this heartbeat: its bumped epoch is not kept, 0 is answered.
    assert first.endpoint_information_epoch == 0
    [mapping] = first.partitions_by_user_endpoint
    assert (mapping.user_endpoint.host, mapping.user_endpoint.port) == ("h1", 7001)
    assert [(tp.topic, tp.partitions) for tp in mapping.active_partitions] == \
        [(INPUT, [0, 1, 2]), (REPARTITION, [0, 1, 2])]
    _, current = h.call("streams_group_heartbeat", hb.StreamsGroupHeartbeatRequest(
        group_id=GROUP, member_id="m1", member_epoch=first.member_epoch,
        endpoint_information_epoch=0, active_tasks=first.active_tasks, standby_tasks=[],
        warmup_tasks=[]), 1)
    assert current.response.response.partitions_by_user_endpoint is None
    _, behind = h.call("streams_group_heartbeat", hb.StreamsGroupHeartbeatRequest(
        group_id=GROUP, member_id="m1", member_epoch=first.member_epoch,
        endpoint_information_epoch=5, active_tasks=first.active_tasks, standby_tasks=[],
        warmup_tasks=[]), 1)
    assert len(behind.response.response.partitions_by_user_endpoint) == 1


def test_assignment_interval_delays_the_next_target() -> None:
    """`canComputeNextTargetAssignment` (KIP-1263): a new target at most once per
    `group.streams.assignment.interval.ms`; the first heartbeat after it computes."""
    h = ready(config=GroupCoordinatorConfig(group_streams_initial_rebalance_delay_ms=0))
    first = h.streams_heartbeat("m1", 0).response
    assert ids(first.active_tasks) == {"0": [0, 1, 2], "1": [0, 1, 2]}
    h.advance(500)
    second = h.streams_heartbeat("m2", 0, process="p2").response
    assert [(s.status_code, s.status_detail) for s in second.status] == [
        (5, "Assignment delayed due to the configured assignment interval.")]
    assert h.group().state() == StreamsGroupState.ASSIGNING
    h.advance(500)
    later = h.streams_heartbeat("m2", second.member_epoch, active={}, standby={},
                                warmup={}).response
    assert later.status == []
    assert h.group().assignment_epoch == h.group().group_epoch
