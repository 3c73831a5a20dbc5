"""DeleteShareGroupOffsets (API 92, v0): delete the share state of whole topics for a
group (`GroupCoordinatorService.deleteShareGroupOffsets`); the next fetch
re-initializes them by `share.auto.offset.reset`. The group must have no members
(NON_EMPTY_GROUP); an unknown topic is UNKNOWN_TOPIC_OR_PARTITION for that topic."""

from __future__ import annotations

from typing import Any

from groupcoord.apis import share_group_members
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseTopic,
)

API_KEY = 92
MIN_VERSION = 0
MAX_VERSION = 0
REQUEST = DeleteShareGroupOffsetsRequest
RESPONSE = DeleteShareGroupOffsetsResponse


async def handle(ctx: Any, header: Any, request: Any, version: int) -> Any:
    code = await share_group_members.empty_group_error(ctx, request.group_id)
    if code != ErrorCode.NONE:
        return DeleteShareGroupOffsetsResponse(error_code=code)
    responses = []
    for t in request.topics:
        topic = ctx.topics.get(t.topic_name)
        if topic is None:
            responses.append(DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        ctx.shares.delete_state(request.group_id, topic.topic_id)
        responses.append(DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name,
                                                              topic_id=topic.topic_id))
    return DeleteShareGroupOffsetsResponse(responses=responses)
