"""ConsumerGroupHeartbeat (API 68, v0-1): the KIP-848 consumer protocol
(`KafkaApis.handleConsumerGroupHeartbeat`). v0 lets the coordinator generate the member id
on join; v1 requires a client-generated one and adds SubscribedTopicRegex. The request goes
whole to the group's shard, with the group's dynamic configs (`consumer.session.timeout.ms`,
`consumer.heartbeat.interval.ms`, Kafka's `GroupConfigManager.groupConfig`) as an input."""

from __future__ import annotations

from typing import Any

from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

API_KEY = 68
MIN_VERSION = 0
MAX_VERSION = 1
REQUEST = ConsumerGroupHeartbeatRequest
RESPONSE = ConsumerGroupHeartbeatResponse


def group_overrides(ctx: Any, group_id: str) -> dict[str, str]:
    """The group's stored dynamic configs (`GroupConfigStore`), empty without a store."""
    store = getattr(getattr(ctx, "shares", None), "group_configs", None)
    return dict(store.get(group_id)) if store is not None else {}


async def handle(ctx: Any, header: Any, request: Any, version: int) -> Any:
    overrides = group_overrides(ctx, request.group_id or "")

    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return shard.consumer_group_heartbeat(request, version, op_ctx, now_ms, overrides)
    return await ctx.groups.call(request.group_id, run)
