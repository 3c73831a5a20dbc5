"""ConsumerGroupHeartbeat (API 68, v0-1): the KIP-848 consumer protocol
(`KafkaApis.handleConsumerGroupHeartbeat`). v0 lets the coordinator generate the member id
on join; v1 requires a client-generated one and adds SubscribedTopicRegex. The request goes
whole to the group's shard."""

from __future__ import annotations

from typing import Any

from groupcoord.apis.group_support import call_group
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

API_KEY = 68
MIN_VERSION = 0
MAX_VERSION = 1
REQUEST = ConsumerGroupHeartbeatRequest
RESPONSE = ConsumerGroupHeartbeatResponse


async def handle(ctx: Any, header: Any, request: Any, version: int) -> Any:
    return await call_group(ctx, request.group_id, "consumer_group_heartbeat", request, version)
