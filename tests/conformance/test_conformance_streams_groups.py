"""KIP-1071 streams groups, differentially: StreamsGroupHeartbeat and StreamsGroupDescribe
against Kafka 4.4 (`GroupMetadataManager.streamsGroupHeartbeat`, `streamsGroupDescribe`).

A member joins with a word-count topology (source -> repartition -> stateful counting):
the first answer reports the internal topics as missing, the broker creates them (Kafka
through its controller, asynchronously, so the scenario polls unrecorded until the tasks
arrive), and from then on heartbeats, describes, errors and the leave must match.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance import classic, consumer, offsets
from conformance.conversation import Conversation
from conformance.differential import Scenario
from groupcoord.wire.generated import streams_group_describe as sgd
from groupcoord.wire.generated import streams_group_heartbeat as hb
from groupcoord.wire.generated import streams_group_topology_description_update as tdu
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.join_group import JoinGroupResponse
from groupcoord.wire.generated.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)

Run = Callable[[Scenario], None]
HEARTBEAT_VERSION = 1
DESCRIBE_VERSION = 1
M1, M2 = consumer.member_id(1), consumer.member_id(2)


def topology(c: Conversation, source: str) -> hb.Topology:
    repartition, changelog = c.name("words-repartition"), c.name("counts-changelog")
    return hb.Topology(epoch=0, subtopologies=[
        hb.Subtopology(subtopology_id="0", source_topics=[source],
                       repartition_sink_topics=[repartition]),
        hb.Subtopology(subtopology_id="1",
                       repartition_source_topics=[hb.TopicInfo(name=repartition)],
                       state_changelog_topics=[hb.TopicInfo(name=changelog, topic_configs=[
                           hb.KeyValue(key="cleanup.policy", value="compact")])]),
    ])


def request(group: str, member: str, epoch: int, top: hb.Topology | None = None,
            tasks: list[hb.TaskIds] | None = None, **kw: object
            ) -> hb.StreamsGroupHeartbeatRequest:
    joining = epoch == 0
    fields: dict[str, object] = {
        "group_id": group, "member_id": member, "member_epoch": epoch,
        "rebalance_timeout_ms": 30_000 if joining else -1, "topology": top,
        "process_id": "conformance-process" if joining else None,
        "active_tasks": tasks or [], "standby_tasks": [], "warmup_tasks": []}
    fields.update(kw)
    return hb.StreamsGroupHeartbeatRequest(**fields)  # type: ignore[arg-type]


def heartbeat(c: Conversation, step: str, req: hb.StreamsGroupHeartbeatRequest
              ) -> hb.StreamsGroupHeartbeatResponse:
    return c.call(step, req, HEARTBEAT_VERSION, hb.StreamsGroupHeartbeatResponse)


def describe(c: Conversation, step: str, *groups: str) -> None:
    c.call(step, sgd.StreamsGroupDescribeRequest(group_ids=list(groups)), DESCRIBE_VERSION,
           sgd.StreamsGroupDescribeResponse)


def until_tasks(c: Conversation, group: str, member: str, epoch: int
                ) -> hb.StreamsGroupHeartbeatResponse:
    """Heartbeat (unrecorded) until the internal topics exist and tasks are assigned."""
    last: list[hb.StreamsGroupHeartbeatResponse] = []

    def assigned() -> bool:
        current = last[-1].member_epoch if last else epoch
        response = c.quiet(request(group, member, current), HEARTBEAT_VERSION,
                           hb.StreamsGroupHeartbeatResponse)
        assert response.error_code == 0, f"{c.broker}: {response.error_message}"
        last.append(response)
        return bool(response.active_tasks)
    c.wait_until(assigned, f"{member} assigned tasks")
    return last[-1]


def test_streams_join_internal_topics_describe_leave(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        source = c.create_topic("words", partitions=2)
        group = c.name("app")
        first = heartbeat(c, "join: internal topics missing",
                          request(group, M1, 0, topology(c, source.name)))
        assigned = until_tasks(c, group, M1, first.member_epoch)
        tasks = assigned.active_tasks
        heartbeat(c, "steady heartbeat with owned tasks",
                  request(group, M1, assigned.member_epoch, tasks=tasks))
        describe(c, "describe one member", group)
        c.call("describe asking for the topology description",
               sgd.StreamsGroupDescribeRequest(group_ids=[group, c.name("missing")],
                                               include_topology_description=True,
                                               include_authorized_operations=True),
               DESCRIBE_VERSION, sgd.StreamsGroupDescribeResponse)
        heartbeat(c, "leave", request(group, M1, -1))
        describe(c, "describe empty group", group)
    differential(scenario)


def test_streams_missing_source_topics(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("app")
        joined = heartbeat(c, "join: source topic missing",
                           request(group, M1, 0, topology(c, c.name("absent"))))
        describe(c, "describe not ready group", group)
        heartbeat(c, "heartbeat while not ready", request(group, M1, joined.member_epoch))
    differential(scenario)


def test_streams_heartbeat_errors(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        source = c.create_topic("words", partitions=1)
        group = c.name("app")
        top = topology(c, source.name)
        heartbeat(c, "empty member id", request(group, "", 0, top))
        heartbeat(c, "join without rebalance timeout",
                  request(group, M1, 0, top, rebalance_timeout_ms=-1))
        heartbeat(c, "join without topology", request(group, M1, 0))
        heartbeat(c, "unknown group at epoch 3", request(c.name("missing"), M1, 3))
        heartbeat(c, "epoch below -2", request(group, M1, -3))
        changelog_with_count = hb.Topology(epoch=0, subtopologies=[hb.Subtopology(
            subtopology_id="0", source_topics=[source.name], state_changelog_topics=[
                hb.TopicInfo(name=c.name("chg"), partitions=4)])])
        heartbeat(c, "changelog with a partition count",
                  request(group, M1, 0, changelog_with_count))
        heartbeat(c, "internal topic in the topology", request(group, M1, 0, hb.Topology(
            epoch=0, subtopologies=[hb.Subtopology(subtopology_id="0",
                                                   source_topics=["__consumer_offsets"])])))
        first = heartbeat(c, "join", request(group, M1, 0, top))
        assigned = until_tasks(c, group, M1, first.member_epoch)
        heartbeat(c, "epoch ahead", request(group, M1, assigned.member_epoch + 5))
        heartbeat(c, "unknown member", request(group, M2, assigned.member_epoch))
        heartbeat(c, "topology on a heartbeat",
                  request(group, M1, assigned.member_epoch, top))
        heartbeat(c, "another topology on join", request(group, M2, 0, hb.Topology(
            epoch=0, subtopologies=[hb.Subtopology(subtopology_id="0",
                                                   source_topics=[source.name])])))
        describe(c, "describe missing and empty ids", c.name("missing"), "")
    differential(scenario)


def test_streams_topology_description_update_without_a_plugin(differential: Run) -> None:
    """Neither broker has a KIP-1331 topology description plugin configured."""
    def scenario(c: Conversation) -> None:
        c.call("push a topology description", tdu.StreamsGroupTopologyDescriptionUpdateRequest(
            group_id=c.name("app"), member_id=M1, topology_epoch=0,
            topology_description=tdu.TopologyDescription(subtopologies=[], global_stores=[])),
            0, tdu.StreamsGroupTopologyDescriptionUpdateResponse)
    differential(scenario)


def test_streams_interactive_query_endpoints(differential: Run) -> None:
    """A member with an `application.server` endpoint: the endpoint-to-partitions map and
    the endpoint information epoch (`EndpointToPartitionsManager`)."""
    def scenario(c: Conversation) -> None:
        source = c.create_topic("words", partitions=2)
        group = c.name("app")
        endpoint = hb.Endpoint(host="streams-host", port=7070)
        first = heartbeat(c, "join with an endpoint", request(
            group, M1, 0, topology(c, source.name), user_endpoint=endpoint))
        assigned = until_tasks(c, group, M1, first.member_epoch)
        epoch = assigned.endpoint_information_epoch
        heartbeat(c, "heartbeat at the group's endpoint epoch", request(
            group, M1, assigned.member_epoch, tasks=assigned.active_tasks,
            endpoint_information_epoch=epoch))
        heartbeat(c, "heartbeat behind the endpoint epoch", request(
            group, M1, assigned.member_epoch, tasks=assigned.active_tasks,
            endpoint_information_epoch=epoch + 7))
    differential(scenario)


def test_streams_second_member_revoke_before_assign(differential: Run) -> None:
    """A second member joins: the first revokes half its tasks (same epoch) before the
    second gets them (`CurrentAssignmentBuilder`); both end stable at the new epoch."""
    def scenario(c: Conversation) -> None:
        source = c.create_topic("words", partitions=2)
        group = c.name("app")
        top = topology(c, source.name)
        first = heartbeat(c, "first member joins", request(group, M1, 0, top))
        m1 = until_tasks(c, group, M1, first.member_epoch)
        m2 = heartbeat(c, "second member joins", request(
            group, M2, 0, top, process_id="conformance-process-2"))
        m1 = heartbeat(c, "first member told to revoke", request(
            group, M1, m1.member_epoch, tasks=m1.active_tasks))
        heartbeat(c, "second member still waits", request(group, M2, m2.member_epoch))
        m1 = heartbeat(c, "first member revoked", request(
            group, M1, m1.member_epoch, tasks=m1.active_tasks))
        m2 = heartbeat(c, "second member gets its tasks", request(group, M2, m2.member_epoch))
        describe(c, "both members", group)
    differential(scenario)


def test_streams_and_other_group_kinds_do_not_mix(differential: Run) -> None:
    """A streams group id is not a consumer, share or classic group and the other way
    round (`classicGroupJoin` answers INCONSISTENT_GROUP_PROTOCOL while it has members)."""
    def scenario(c: Conversation) -> None:
        source = c.create_topic("words", partitions=1)
        streams_group, consumer_group = c.name("streams"), c.name("consumer")
        first = heartbeat(c, "streams join", request(
            streams_group, M1, 0, topology(c, source.name)))
        until_tasks(c, streams_group, M1, first.member_epoch)
        # Unrecorded: the consumer group's own epochs are not what this scenario compares.
        c.quiet(consumer.join_request(consumer_group, M1, [source.name]),
                consumer.HEARTBEAT_VERSION, consumer.ConsumerGroupHeartbeatResponse)
        heartbeat(c, "streams heartbeat to a consumer group", request(
            consumer_group, M2, 0, topology(c, source.name)))
        consumer.join(c, "consumer heartbeat to a streams group", streams_group, M2,
                      [source.name])
        c.call("share heartbeat to a streams group", ShareGroupHeartbeatRequest(
            group_id=streams_group, member_id=M2, member_epoch=0,
            subscribed_topic_names=[source.name]), 1, ShareGroupHeartbeatResponse)
        c.call("classic join to a streams group", classic.join_request(streams_group),
               classic.JOIN_VERSION, JoinGroupResponse)
        heartbeat(c, "the streams member leaves", request(streams_group, M1, -1))
        c.call("classic join to the empty streams group", classic.join_request(streams_group),
               classic.JOIN_VERSION, JoinGroupResponse)
        # What is left of the group afterwards differs (docs/streams-groups.md, "Known
        # differences"), so the scenario ends here.
    differential(scenario)


def test_streams_three_processes_share_the_tasks(differential: Run) -> None:
    """Three members (three processes) join one after the other; the sticky assignor's
    targets after each join, read with StreamsGroupDescribe."""
    def scenario(c: Conversation) -> None:
        source = c.create_topic("words", partitions=3)
        group = c.name("app")
        top = topology(c, source.name)
        first = heartbeat(c, "first member joins", request(group, M1, 0, top))
        until_tasks(c, group, M1, first.member_epoch)
        for n, member in ((2, M2), (3, consumer.member_id(3))):
            heartbeat(c, f"member {n} joins", request(group, member, 0, top,
                                                       process_id=f"conformance-process-{n}"))
            describe(c, f"targets after member {n} joined", group)
    differential(scenario)


def test_streams_static_member_leaves_and_rejoins(differential: Run) -> None:
    """Static membership: epoch -2 keeps the member's place and tasks, a rejoin under a new
    member id takes them over, a second instance with the same id is refused."""
    def scenario(c: Conversation) -> None:
        source = c.create_topic("words", partitions=2)
        group = c.name("app")
        top = topology(c, source.name)
        first = heartbeat(c, "static member joins", request(group, M1, 0, top,
                                                              instance_id="instance-1"))
        assigned = until_tasks(c, group, M1, first.member_epoch)
        heartbeat(c, "another member with the same instance id", request(
            group, M2, 0, top, instance_id="instance-1"))
        heartbeat(c, "static leave", request(group, M1, -2, instance_id="instance-1"))
        describe(c, "the member is kept", group)
        heartbeat(c, "rejoin under a new member id", request(group, M2, 0, top,
                                                              instance_id="instance-1"))
        heartbeat(c, "the old member id is fenced", request(
            group, M1, assigned.member_epoch, instance_id="instance-1"))
        describe(c, "the new member has the tasks", group)
    differential(scenario)


def test_streams_member_offsets(differential: Run) -> None:
    """`StreamsGroup.validateOffsetCommit` / `validateOffsetFetch` for a member's commits,
    and DeleteGroups / ListGroups of a streams group."""
    def scenario(c: Conversation) -> None:
        source = c.create_topic("words", partitions=2)
        group = c.name("app")
        first = heartbeat(c, "join", request(group, M1, 0, topology(c, source.name)))
        epoch = until_tasks(c, group, M1, first.member_epoch).member_epoch
        offsets.commit(c, "commit at the member epoch", group, source.name, {0: 5},
                       generation=epoch, member_id=M1)
        offsets.commit(c, "commit from a newer epoch", group, source.name, {0: 6},
                       generation=epoch + 1, member_id=M1)
        offsets.commit(c, "commit from an unknown member", group, source.name, {0: 6},
                       generation=epoch, member_id=M2)
        offsets.commit(c, "commit at version 8", group, source.name, {0: 6},
                       generation=epoch, member_id=M1, version=8)
        offsets.fetch(c, "fetch at the member epoch", group, [source], member_id=M1,
                      member_epoch=epoch)
        offsets.fetch(c, "fetch at a stale epoch", group, [source], member_id=M1,
                      member_epoch=epoch - 1)
        offsets.list_own_groups(c, "list streams groups", types=["streams"])
        offsets.delete_groups(c, "delete while a member is in", group)
        heartbeat(c, "leave", request(group, M1, -1))
        offsets.delete_groups(c, "delete the empty group", group)
        offsets.fetch(c, "offsets are gone", group, [source])
    differential(scenario)


def test_streams_api_version_ranges(differential: Run) -> None:
    """ApiVersions advertises StreamsGroupHeartbeat, StreamsGroupDescribe and
    StreamsGroupTopologyDescriptionUpdate with Kafka 4.4's ranges."""
    def scenario(c: Conversation) -> None:
        versions = c.quiet(ApiVersionsRequest(client_software_name="conformance",
                                              client_software_version="1"), 3,
                           ApiVersionsResponse)
        c.record("streams version ranges", sorted(
            (k.api_key, k.min_version, k.max_version) for k in versions.api_keys
            if k.api_key in (88, 89, 93)))
    differential(scenario)
