"""ShareGroupHeartbeat (API 76): KIP-932 share-group membership
(`KafkaApis.handleShareGroupHeartbeatRequest` -> `GroupMetadataManager.shareGroupHeartbeat`).

v1 (Kafka 4.1+) is served from the generated codec; v0 (Kafka 3.9/4.0 early access, the
Java 3.9 `KafkaShareConsumer`) from `share_v0_codec`. The request goes whole to the
group's shard, with the topics image it resolves subscribed names against and the
group's `share.*` config overrides. Share-partitions the heartbeat found uninitialized are
initialized after the reply (`share_state_init`).
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis import share_state_init, share_support
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_support import group_overrides
from groupcoord.apis.share_v0_codec import as_version, with_v0
from groupcoord.coordinator.share.heartbeat import HeartbeatReply
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = share_support.SHARE_MIN_VERSION, 1
REQUEST = with_v0(ShareGroupHeartbeatRequest)
RESPONSE = with_v0(ShareGroupHeartbeatResponse)


async def handle(ctx: RequestContext, header: RequestHeader, request: ShareGroupHeartbeatRequest,
                 version: int) -> ShareGroupHeartbeatResponse:
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    if authz.require_subscribed_topics(ctx, request.subscribed_topic_names):
        return as_version(ShareGroupHeartbeatResponse(
            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=None), version)
    image = share_support.topics_image(ctx)
    overrides = group_overrides(ctx, request.group_id)

    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return shard.share_group_heartbeat(request, version, op_ctx, now_ms, image, overrides)
    reply: HeartbeatReply = await ctx.groups.call(request.group_id, run)
    # A leave touches only the group, as in Kafka's handleShareGroupHeartbeat: the member's
    # share session and acquired records stay until its final ShareFetch/ShareAcknowledge
    # (epoch -1, which a closing consumer sends next, often racing this heartbeat), its
    # connection closes, or the locks expire.
    if reply.initialize is not None:
        share_state_init.start_after_heartbeat(ctx, reply.initialize)
    return as_version(reply.response, version)
