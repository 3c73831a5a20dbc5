"""StreamsGroupDescribe's view of a group (`StreamsGroup.asDescribedGroup`,
`StreamsGroupMember.asStreamsGroupDescribeMember`): the topology with the partition
counts the coordinator decided once it is configured (else as the members declared it),
each member's current tasks and target, and the task offsets it last reported.
"""

from __future__ import annotations

from collections.abc import Mapping

from groupcoord.coordinator.streams.assignor import NAME as ASSIGNOR_NAME
from groupcoord.coordinator.streams.group import StreamsGroup
from groupcoord.coordinator.streams.member import StreamsGroupMember
from groupcoord.coordinator.streams.tasks import EMPTY, Tasks, TasksTuple, without_epochs
from groupcoord.logformat.generated.streams_group_topology import TopicInfo as RecordTopicInfo
from groupcoord.wire.generated import streams_group_describe as wire


def _topic_info(info: RecordTopicInfo, partitions: Mapping[str, int] | None) -> wire.TopicInfo:
    count = info.partitions if partitions is None else partitions.get(info.name, info.partitions)
    return wire.TopicInfo(name=info.name, partitions=count,
                          replication_factor=info.replication_factor,
                          topic_configs=[wire.KeyValue(key=c.key, value=c.value)
                                         for c in info.topic_configs])


def topology(group: StreamsGroup) -> wire.Topology | None:
    if group.topology is None:
        return None
    configured = group.configured
    ready = configured is not None and configured.is_ready() \
        and configured.topology_epoch == group.topology.epoch
    out = []
    for sid, s in sorted(group.topology.subtopologies.items()):
        counts: dict[str, int] | None = None
        if ready and configured is not None and configured.subtopologies is not None:
            sub = configured.subtopologies[sid]
            counts = {**sub.repartition_source_topics, **sub.state_changelog_topics}
        out.append(wire.Subtopology(
            subtopology_id=sid, source_topics=sorted(s.source_topics),
            repartition_sink_topics=sorted(s.repartition_sink_topics),
            repartition_source_topics=sorted((_topic_info(t, counts)
                                              for t in s.repartition_source_topics),
                                             key=lambda t: t.name),
            state_changelog_topics=sorted((_topic_info(t, counts)
                                           for t in s.state_changelog_topics),
                                          key=lambda t: t.name)))
    return wire.Topology(epoch=group.topology.epoch, subtopologies=out)


def _ids(tasks: Tasks) -> list[wire.TaskIds]:
    return [wire.TaskIds(subtopology_id=s, partitions=sorted(p)) for s, p in sorted(tasks.items())]


def _assignment(t: TasksTuple) -> wire.Assignment:
    return wire.Assignment(active_tasks=_ids(t.active), standby_tasks=_ids(t.standby),
                           warmup_tasks=_ids(t.warmup))


def _offsets(offsets: Mapping[tuple[str, int], int]) -> list[wire.TaskOffset]:
    return [wire.TaskOffset(subtopology_id=s, partition=p, offset=o)
            for (s, p), o in sorted(offsets.items())]


def member(group: StreamsGroup, m: StreamsGroupMember) -> wire.Member:
    endpoint = None if m.user_endpoint is None else \
        wire.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1])
    current = TasksTuple(without_epochs(m.assigned.active), m.assigned.standby,
                         m.assigned.warmup)
    return wire.Member(
        member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id,
        rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
        topology_epoch=m.topology_epoch, process_id=m.process_id, user_endpoint=endpoint,
        client_tags=[wire.KeyValue(key=k, value=v) for k, v in m.client_tags],
        task_offsets=_offsets(group.task_offsets.get(m.member_id, {})),
        task_end_offsets=_offsets(group.task_end_offsets.get(m.member_id, {})),
        assignment=_assignment(current),
        target_assignment=_assignment(group.target.get(m.member_id, EMPTY)))


def described(group: StreamsGroup) -> wire.DescribedGroup:
    return wire.DescribedGroup(
        group_id=group.group_id, group_state=group.state().value,
        group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
        assignor_name=ASSIGNOR_NAME, topology=topology(group),
        members=[member(group, m) for m in group.members.values()])
