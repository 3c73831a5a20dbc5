"""ConsumerGroupDescribe and ListGroups views of consumer groups
(`ConsumerGroup.asDescribedGroup`, `ConsumerGroupMember.asConsumerGroupDescribeMember`,
`GroupMetadataManager.listGroups`).

A member's described Assignment is its assigned partitions plus those pending
revocation; TargetAssignment is its target. MemberType (v1) is 0 for a classic-protocol
member and 1 for a consumer-protocol member.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.consumer_group_describe import (
    Assignment,
    DescribedGroup,
    Member,
    TopicPartitions,
)

GROUP_TYPE = "consumer"
PROTOCOL_TYPE = "consumer"


def _assignment(parts: Mapping[bytes, Any], image: TopicsImage) -> Assignment:
    return Assignment(topic_partitions=[
        TopicPartitions(topic_id=t, topic_name=image.name_of(t) or "", partitions=sorted(ps))
        for t, ps in sorted(parts.items()) if ps])


def describe_member(m: ConsumerGroupMember, target: Mapping[bytes, frozenset[int]],
                    image: TopicsImage) -> Member:
    owned: dict[bytes, set[int]] = {}
    for assignment in (m.assigned, m.pending_revocation):
        for t, ps in assignment.items():
            owned.setdefault(t, set()).update(ps)
    return Member(
        member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
        member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
        subscribed_topic_names=list(m.subscribed_topic_names),
        # Kafka's ConsumerGroupMember keeps "" for no regex and describes it as it is.
        subscribed_topic_regex=m.subscribed_topic_regex or "",
        assignment=_assignment(owned, image), target_assignment=_assignment(target, image),
        member_type=0 if m.classic is not None else 1)


def describe(mgr: Any, group_id: str, version: int) -> DescribedGroup:
    group = mgr.groups.get(group_id)
    if group is None:
        message = (f"Group {group_id} is not a consumer group." if mgr.classic.get(group_id)
                   else f"Group {group_id} not found.")
        return DescribedGroup(group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                              error_message=message)
    default = mgr.config.group_consumer_assignors[0]
    members = [describe_member(group.members[mid], group.target.get(mid, {}), mgr.image)
               for mid in sorted(group.members)]
    return DescribedGroup(
        group_id=group_id, group_state=group.state().value, group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.preferred_assignor(default), members=members)
