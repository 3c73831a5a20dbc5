"""StreamsGroupTopologyDescriptionUpdate (API 93, v0): KIP-1331's push of a Streams
application's topology description to a broker-side plugin
(`KafkaApis.handleStreamsGroupTopologyDescriptionUpdate`,
`GroupCoordinatorService.throwIfStreamsGroupTopologyDescriptionUpdateInvalid`).

groupcoord has no topology description plugin, so it answers as Kafka without one: READ on
the group is checked first (GROUP_AUTHORIZATION_FAILED), then UNSUPPORTED_VERSION "The
broker has no streams group topology description plugin configured."; the heartbeat never
asks for a description (TopologyDescriptionRequired stays false), so clients do not push.
"""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.streams_group_topology_description_update import (
    StreamsGroupTopologyDescriptionUpdateRequest,
    StreamsGroupTopologyDescriptionUpdateResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 0
REQUEST = StreamsGroupTopologyDescriptionUpdateRequest
RESPONSE = StreamsGroupTopologyDescriptionUpdateResponse
NO_PLUGIN = "The broker has no streams group topology description plugin configured."


async def handle(ctx: RequestContext, header: RequestHeader, request: StreamsGroupTopologyDescriptionUpdateRequest,
                 version: int) -> StreamsGroupTopologyDescriptionUpdateResponse:
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    return StreamsGroupTopologyDescriptionUpdateResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=NO_PLUGIN)
