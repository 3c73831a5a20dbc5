"""The share-group operations of `GroupCoordinatorShard`, kept out of the shard module.

Mirrors the share branches of Kafka's `GroupCoordinatorShard` / `GroupMetadataManager`:
a group id already used by a classic or consumer group is GROUP_ID_NOT_FOUND for share
RPCs (and the other way round: the other kinds' handlers never see share groups, since
they look only in their own tables); DeleteGroups on a non-empty share group is
NON_EMPTY_GROUP.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from groupcoord.coordinator.result import OpContext, Result
from groupcoord.coordinator.shard_groups import ShardGroups
from groupcoord.coordinator.share import state_metadata as smd
from groupcoord.coordinator.share.group import ShareGroup
from groupcoord.coordinator.share.heartbeat import error_reply, share_group_heartbeat
from groupcoord.coordinator.share.manager import ASSIGNOR_NAME
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.delete_groups import DeletableGroupResult
from groupcoord.wire.generated.share_group_describe import (
    Assignment,
    DescribedGroup,
    Member,
    TopicPartitions,
)


def _other_kind(shard: ShardGroups, group_id: str) -> bool:
    return shard.consumer.get(group_id) is not None or shard.classic.get(group_id) is not None \
        or group_id in shard.streams.groups


def heartbeat(shard: ShardGroups, request: Any, version: int, ctx: OpContext,
              now_ms: int, image: TopicsImage | None,
              overrides: dict[str, str] | None) -> Result:
    if request.group_id and _other_kind(shard, request.group_id):
        return Result(response=error_reply(
            ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a share group."))
    if version == 0 and request.member_epoch == 0 and not request.member_id:
        # v0 (Kafka 3.9/4.0 early access): the coordinator generates the member id.
        request.member_id = kafka_uuid(shard.ids.member_id(""))
    return share_group_heartbeat(shard.share, request, version, ctx, now_ms, image, overrides)


def kafka_uuid(source_id: str) -> str:
    """A member id the Java client can parse with `Uuid.fromString` (URL-safe base64 of
    16 bytes), derived from the injected id source so that tests stay deterministic."""
    raw = source_id.lstrip("-").replace("-", "")
    try:
        data = bytes.fromhex(raw)
    except ValueError:
        data = b""
    if len(data) != 16:
        data = hashlib.blake2b(source_id.encode(), digest_size=16).digest()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def describe(shard: ShardGroups, group_id: str) -> DescribedGroup:
    if not group_id:
        return DescribedGroup(group_id=group_id, error_code=ErrorCode.INVALID_GROUP_ID)
    group = shard.share.get(group_id)
    if group is None:
        return DescribedGroup(group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                              error_message=f"Group {group_id} not found.")
    return described(group, shard.share.image)


def described(group: ShareGroup, image: TopicsImage) -> DescribedGroup:
    """`ShareGroup.asDescribedGroup`."""
    members = []
    for mid in sorted(group.members):
        m = group.members[mid]
        tps = [TopicPartitions(topic_id=t, topic_name=image.name_of(t) or "",
                               partitions=sorted(m.assigned[t])) for t in sorted(m.assigned)]
        members.append(Member(member_id=mid, rack_id=m.rack_id, member_epoch=m.member_epoch,
                              client_id=m.client_id, client_host=m.client_host,
                              subscribed_topic_names=list(m.subscribed_topic_names),
                              assignment=Assignment(topic_partitions=tps)))
    return DescribedGroup(group_id=group.group_id, group_state=group.state().value,
                          group_epoch=group.group_epoch,
                          assignment_epoch=group.assignment_epoch,
                          assignor_name=ASSIGNOR_NAME, members=members)


def delete_group(shard: ShardGroups, group_id: str, fx: Any) -> DeletableGroupResult:
    group = shard.share.groups[group_id]
    error = shard.share.validate_delete(group)
    if error == ErrorCode.NONE:
        if group.state_metadata is not None:
            # `shareGroupBuildPartitionDeleteRequest`: mark everything deleting first; the
            # DeleteGroups handler removes the share state after this write.
            fx.records.append(smd.record(group_id, smd.for_group_delete(group.state_metadata)))
        shard.share.delete_records(group, fx.records)
        fx.event(group_id, "group_deleted", group.group_epoch, reason="DeleteGroups request")
    return DeletableGroupResult(group_id=group_id, error_code=int(error))
