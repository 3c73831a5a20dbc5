"""StreamsGroupHeartbeat (API 88, v0-1): KIP-1071 streams groups
(`KafkaApis.handleStreamsGroupHeartbeat` -> `GroupMetadataManager.streamsGroupHeartbeat`).

Before the shard sees a joining member's topology, the topics it names are checked here as
Kafka does: none may be a Kafka-internal topic or an illegal name (STREAMS_INVALID_TOPOLOGY)
and every one must be describable (TOPIC_AUTHORIZATION_FAILED). After the heartbeat, the
internal (repartition and changelog) topics the coordinator found missing are created
with CREATE permission on the cluster or the topics (`createStreamsInternalTopics`); the
member keeps hearing MISSING_INTERNAL_TOPICS until they exist. The group's `streams.*`
dynamic configs go to the shard with the request, as Kafka's `GroupConfigManager` does.
"""

from __future__ import annotations

import logging
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.common import check_new_topic, topic_name_error, validate_configs
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.apis.group_support import group_overrides
from groupcoord.coordinator.streams.configure import InternalTopic, Status
from groupcoord.coordinator.streams.heartbeat import HeartbeatResult
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.streams_group_heartbeat import (
    Status as WireStatus,
)
from groupcoord.wire.generated.streams_group_heartbeat import (
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
)
from groupcoord.wire.headers import RequestHeader

log = logging.getLogger("groupcoord.apis.streams")

MIN_VERSION, MAX_VERSION = 0, 1
REQUEST = StreamsGroupHeartbeatRequest
RESPONSE = StreamsGroupHeartbeatResponse


def _required_topics(topology: Any) -> list[str]:
    seen: dict[str, None] = {}
    for s in topology.subtopologies:
        for name in [*s.source_topics, *s.repartition_sink_topics,
                     *(t.name for t in s.repartition_source_topics),
                     *(t.name for t in s.state_changelog_topics)]:
            seen.setdefault(name)
    return list(seen)


def _check_topology(ctx: RequestContext, topology: Any) -> StreamsGroupHeartbeatResponse | None:
    required = _required_topics(topology)
    internal = {t.name for t in ctx.topics.all() if t.internal}
    prohibited = [t for t in required if t in internal]
    if prohibited:
        return StreamsGroupHeartbeatResponse(
            error_code=ErrorCode.STREAMS_INVALID_TOPOLOGY,
            error_message=f"Use of Kafka internal topics {','.join(prohibited)} in a Kafka "
                          "Streams topology is prohibited.")
    invalid = [t for t in required if topic_name_error(t) is not None]
    if invalid:
        return StreamsGroupHeartbeatResponse(
            error_code=ErrorCode.STREAMS_INVALID_TOPOLOGY,
            error_message=f"Topic names {','.join(invalid)} are not valid topic names.")
    if required and len(authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC, required)) \
            < len(required):
        return StreamsGroupHeartbeatResponse(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return None


def _create_internal_topics(ctx: RequestContext, response: StreamsGroupHeartbeatResponse,
                            topics: dict[str, InternalTopic]) -> None:
    if authz.allowed_on_cluster(ctx, authz.Op.CREATE):
        unauthorized: list[str] = []
    else:
        unauthorized = [n for n in topics if not authz.allowed(ctx, authz.Op.CREATE,
                                                                 authz.TOPIC, n)]
    if unauthorized:
        detail = "Unauthorized to CREATE on topics " + ", ".join(unauthorized) + "."
        for status in response.status or []:
            if status.status_code == Status.MISSING_INTERNAL_TOPICS:
                status.status_detail += "; " + detail
                return
        response.status = [*(response.status or []),
                           WireStatus(status_code=Status.MISSING_INTERNAL_TOPICS,
                                      status_detail=detail)]
        return
    for topic in topics.values():
        try:
            check_new_topic(ctx, topic.name)
            configs = dict(topic.configs)
            validate_configs(configs)  # type: ignore[arg-type]
            ctx.topics.create(topic.name, topic.num_partitions, configs)
        except ApiError as exc:
            # Another heartbeat may have created it meanwhile; a real failure shows up
            # again as MISSING_INTERNAL_TOPICS on the next heartbeat.
            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                log.warning("creating internal topic %s failed: %s", topic.name, exc)


async def handle(ctx: RequestContext, header: RequestHeader, request: StreamsGroupHeartbeatRequest,
                 version: int) -> StreamsGroupHeartbeatResponse:
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    if request.topology is not None:
        rejected = _check_topology(ctx, request.topology)
        if rejected is not None:
            return rejected

    overrides = group_overrides(ctx, request.group_id or "")

    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return shard.streams_group_heartbeat(request, version, op_ctx, now_ms, overrides)
    result: HeartbeatResult = await ctx.groups.call(request.group_id, run)
    if result.topics_to_create:
        _create_internal_topics(ctx, result.response, result.topics_to_create)
    return result.response
