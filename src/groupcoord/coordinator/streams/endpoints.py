"""Interactive-query endpoints (`streams.topics.EndpointToPartitionsManager`,
`StreamsGroup.buildEndpointToPartitions`): for every member with a user endpoint
(`application.server`), the input partitions of its active tasks and of its standby and
warm-up tasks (warm-ups run as standbys on the client). A task reads partition p of each
source and repartition-source topic of its subtopology that has a partition p.

The group's endpoint information epoch is soft state, bumped when a member's endpoint
changes or a member with an endpoint gets other tasks; a member whose last-seen epoch
differs gets the whole map.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupcoord.coordinator.streams.configure import ConfiguredSubtopology
from groupcoord.coordinator.streams.group import StreamsGroup
from groupcoord.coordinator.streams.member import StreamsGroupMember
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.generated import streams_group_heartbeat as wire


def endpoint_changed(before: StreamsGroupMember, after: StreamsGroupMember) -> bool:
    """`hasUserEndpointChanged`."""
    return before.user_endpoint != after.user_endpoint


def _partitions(tasks: Mapping[str, Iterable[int]],
                subtopologies: Mapping[str, ConfiguredSubtopology],
                image: TopicsImage) -> list[wire.TopicPartition]:
    out = []
    for sid, task_set in sorted(tasks.items()):
        sub = subtopologies.get(sid)
        if sub is None:
            continue
        for topic in sorted(sub.source_topics | set(sub.repartition_source_topics)):
            found = image.by_name.get(topic)
            if found is None:
                continue
            parts = sorted(p for p in task_set if p < found.num_partitions)
            if parts:
                out.append(wire.TopicPartition(topic=topic, partitions=parts))
    return out


def _of(member: StreamsGroupMember, subtopologies: Mapping[str, ConfiguredSubtopology],
        image: TopicsImage) -> wire.EndpointToPartitions | None:
    if member.user_endpoint is None:
        return None
    replicas: dict[str, set[int]] = {}
    for role in (member.assigned.standby, member.assigned.warmup):
        for sid, parts in role.items():
            replicas.setdefault(sid, set()).update(parts)
    host, port = member.user_endpoint
    return wire.EndpointToPartitions(
        user_endpoint=wire.Endpoint(host=host, port=port),
        active_partitions=_partitions(member.assigned.active, subtopologies, image),
        standby_partitions=_partitions(replicas, subtopologies, image))


def endpoint_to_partitions(group: StreamsGroup, updated: StreamsGroupMember,
                           replaced: StreamsGroupMember | None,
                           image: TopicsImage) -> list[wire.EndpointToPartitions]:
    """The other members (not the one `updated` replaces) first, then `updated` itself."""
    configured = group.configured
    subtopologies = configured.subtopologies if configured is not None else None
    if not subtopologies:
        return []
    skip = {updated.member_id} | ({replaced.member_id} if replaced is not None else set())
    members = [m for mid, m in group.members.items() if mid not in skip] + [updated]
    return [e for e in (_of(m, subtopologies, image) for m in members) if e is not None]
