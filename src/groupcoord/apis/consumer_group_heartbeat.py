"""ConsumerGroupHeartbeat (API 68, v0-1): the KIP-848 consumer protocol
(`KafkaApis.handleConsumerGroupHeartbeat`). v0 lets the coordinator generate the member id
on join; v1 requires a client-generated one and adds SubscribedTopicRegex. The request goes
whole to the group's shard, with the group's dynamic configs (`consumer.session.timeout.ms`,
`consumer.heartbeat.interval.ms`, Kafka's `GroupConfigManager.groupConfig`) as an input."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_support import group_overrides
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 1
REQUEST = ConsumerGroupHeartbeatRequest
RESPONSE = ConsumerGroupHeartbeatResponse


async def handle(ctx: RequestContext, header: RequestHeader, request: ConsumerGroupHeartbeatRequest,
                 version: int) -> ConsumerGroupHeartbeatResponse:
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    if authz.require_subscribed_topics(ctx, request.subscribed_topic_names):
        return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                              error_message=None)
    overrides = group_overrides(ctx, request.group_id or "")
    topic_filter = authz.describable_topics_filter(ctx)

    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        if topic_filter is not None:
            op_ctx = replace(op_ctx, topic_filter=topic_filter)
        return shard.consumer_group_heartbeat(request, version, op_ctx, now_ms, overrides)
    return await ctx.groups.call(request.group_id, run)
