"""Offset and group-admin request builders for the scenarios (OffsetCommit/Fetch/Delete,
ListGroups, DeleteGroups)."""

from __future__ import annotations

from collections.abc import Sequence

from conformance.conversation import Conversation, Topic
from groupcoord.wire.generated.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from groupcoord.wire.generated.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.wire.generated.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)

COMMIT_VERSION = 9  # the newest by topic name; v10 names topics by id
FETCH_VERSION = 9
NO_GENERATION = -1  # a standalone (admin-style) commit: no member, no generation


def commit_request(group: str, topic: str, offsets: dict[int, int], *,
                   generation: int = NO_GENERATION, member_id: str = "",
                   instance_id: str | None = None, metadata: str | None = "meta",
                   leader_epoch: int = -1, topic_id: bytes | None = None,
                   retention_time_ms: int = -1) -> OffsetCommitRequest:
    partitions = [OffsetCommitRequestPartition(partition_index=p, committed_offset=o,
                                               committed_leader_epoch=leader_epoch,
                                               committed_metadata=metadata)
                  for p, o in offsets.items()]
    topic_entry = OffsetCommitRequestTopic(name=topic, partitions=partitions)
    if topic_id is not None:
        topic_entry = OffsetCommitRequestTopic(name="", topic_id=topic_id, partitions=partitions)
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation,
                               member_id=member_id, group_instance_id=instance_id,
                               retention_time_ms=retention_time_ms, topics=[topic_entry])


def commit(c: Conversation, step: str, group: str, topic: str, offsets: dict[int, int], *,
           version: int = COMMIT_VERSION, **kwargs: object) -> OffsetCommitResponse:
    return c.call(step, commit_request(group, topic, offsets, **kwargs),  # type: ignore[arg-type]
                  version, OffsetCommitResponse)


def fetch(c: Conversation, step: str, group: str, topics: Sequence[Topic] | None,
          partitions: Sequence[int] = (0,), *, member_id: str | None = None,
          member_epoch: int = -1, require_stable: bool = False,
          version: int = FETCH_VERSION) -> OffsetFetchResponse:
    """OffsetFetch of one group (v8+ batched form); `topics=None` fetches all."""
    wanted = None if topics is None else [
        OffsetFetchRequestTopics(name=t.name, topic_id=t.topic_id,
                                 partition_indexes=list(partitions)) for t in topics]
    request = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
        group_id=group, member_id=member_id, member_epoch=member_epoch, topics=wanted)],
        require_stable=require_stable)
    return c.call(step, request, version, OffsetFetchResponse)


def delete_offsets(c: Conversation, step: str, group: str, topic: str,
                   partitions: Sequence[int] = (0,)) -> OffsetDeleteResponse:
    return c.call(step, OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequestTopic(
        name=topic, partitions=[OffsetDeleteRequestPartition(partition_index=p)
                                for p in partitions])]), 0, OffsetDeleteResponse)


# The newest version (per-group ErrorMessage), as a Kafka 4.4 admin client sends.
DELETE_GROUPS_VERSION = 3


def delete_groups(c: Conversation, step: str, *groups: str) -> DeleteGroupsResponse:
    return c.call(step, DeleteGroupsRequest(groups_names=list(groups)), DELETE_GROUPS_VERSION,
                  DeleteGroupsResponse)


def list_own_groups(c: Conversation, step: str, *, states: Sequence[str] = (),
                    types: Sequence[str] = (), version: int = 5) -> None:
    """ListGroups, recording only this scenario's groups (the brokers are shared)."""
    listed = c.quiet(ListGroupsRequest(states_filter=list(states), types_filter=list(types)),
                     version, ListGroupsResponse)
    c.record(step, {"error_code": listed.error_code,
                    "groups": [g for g in listed.groups
                               if g.group_id.startswith(c.name("")) and
                               not g.group_id.endswith("-probe")]})
