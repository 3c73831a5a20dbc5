"""AlterShareGroupOffsets (API 91, v0): set the start offset of share-partitions
(`GroupCoordinatorService.alterShareGroupOffsets`). The group must have no members
(NON_EMPTY_GROUP); a group id of another type is GROUP_ID_NOT_FOUND; an unknown topic or
partition is UNKNOWN_TOPIC_OR_PARTITION for that partition. The new start offset is
persisted as a ShareSnapshot with no in-flight records."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import share_group_members
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponsePartition,
    AlterShareGroupOffsetsResponseTopic,
)

API_KEY = 91
MIN_VERSION = 0
MAX_VERSION = 0
REQUEST = AlterShareGroupOffsetsRequest
RESPONSE = AlterShareGroupOffsetsResponse


def _topic(ctx: Any, group_id: str, t: Any) -> AlterShareGroupOffsetsResponseTopic:
    topic = ctx.topics.get(t.topic_name)
    out = []
    for p in t.partitions:
        code = ErrorCode.NONE
        if topic is None or not 0 <= p.partition_index < topic.num_partitions:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif p.start_offset < -1:
            code = ErrorCode.INVALID_REQUEST
        else:
            offset = p.start_offset
            if offset == -1:  # "latest" as the admin client's reset-to-latest sends it
                plog = ctx.topics.log(topic.name, p.partition_index)
                offset = plog.log_end_offset if plog is not None else 0
            ctx.shares.reset_start_offset(group_id, topic, p.partition_index, offset)
        out.append(AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index,
                                                           error_code=code))
    return AlterShareGroupOffsetsResponseTopic(
        topic_name=t.topic_name, topic_id=topic.topic_id if topic is not None else bytes(16),
        partitions=out)


async def handle(ctx: Any, header: Any, request: Any, version: int) -> Any:
    code = await share_group_members.empty_group_error(ctx, request.group_id)
    if code != ErrorCode.NONE:
        return AlterShareGroupOffsetsResponse(error_code=code)
    return AlterShareGroupOffsetsResponse(
        responses=[_topic(ctx, request.group_id, t) for t in request.topics])
