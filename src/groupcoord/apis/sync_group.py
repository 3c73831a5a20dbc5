"""SyncGroup (API 14, v0-5): the leader hands out assignments, followers wait for them
(`KafkaApis.handleSyncGroupRequest`; v5 requires ProtocolType and ProtocolName)."""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.group_support import call_group
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.wire.generated.sync_group import SyncGroupRequest, SyncGroupResponse
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 5


async def handle(ctx: RequestContext, header: RequestHeader, request: SyncGroupRequest,
                 version: int) -> SyncGroupResponse:
    # Kafka checks v5's mandatory ProtocolType/ProtocolName (the shard answers that) first.
    if version < 5 or (request.protocol_type is not None and request.protocol_name is not None):
        authz.require_group(ctx, authz.Op.READ, request.group_id)
    # The shard answers with the API's response (`GroupCoordinatorShard.sync_group`).
    response: SyncGroupResponse = await call_group(
        ctx, request.group_id, GroupCoordinatorShard.sync_group, request, version)
    return response
