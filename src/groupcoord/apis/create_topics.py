"""CreateTopics (key 19, v2-v7): create topics on this node.

Mirrors `ControllerApis.handleCreateTopics` + `ReplicationControlManager.createTopic`:
per topic, in request order: duplicate names in one request -> INVALID_REQUEST; illegal
or colliding names -> INVALID_TOPIC_EXCEPTION; existing -> TOPIC_ALREADY_EXISTS;
partitions 0 or < -1 -> INVALID_PARTITIONS; a replication factor other than 1 or -1
(the default) -> INVALID_REPLICATION_FACTOR, since there is one broker; manual assignments
must name this broker only; unknown configs or bad values -> INVALID_CONFIG.
`validate_only` checks everything and creates nothing. From v5 the result carries the
partition count, replication factor and the topic's described configs; from v7 its id.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.common import check_new_topic, validate_configs
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.apis.topic_configs import describe_topic, static_broker_configs
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.create_topics import (
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 2, 7


def _partition_count(ctx: RequestContext, topic: Any) -> int:
    node = ctx.config.node_id
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise ApiError(ErrorCode.INVALID_REQUEST,
                           "Both numPartitions or replicationFactor and replicasAssignments "
                           "were set. Both cannot be used at the same time.")
        for i, assignment in enumerate(sorted(topic.assignments, key=lambda a: a.partition_index)):
            if assignment.partition_index != i:
                raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "Partitions must be numbered 0, 1, 2, ... without gaps.")
            if assignment.broker_ids != [node]:
                raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"The manual partition assignment includes a broker other "
                               f"than {node}, or a replication factor other than 1.")
        return len(topic.assignments)
    count = topic.num_partitions
    if count == -1:
        count = ctx.config.default_partitions
    elif count <= 0:
        raise ApiError(ErrorCode.INVALID_PARTITIONS,
                       "Number of partitions was set to an invalid non-positive value.")
    rf = topic.replication_factor
    if rf == 0 or rf < -1:
        raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                       "Replication factor must be larger than 0, or -1 to use the default "
                       "value.")
    if rf > 1:
        raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                       f"Unable to replicate the partition {rf} time(s): The target "
                       f"replication factor of {rf} cannot be reached because only 1 "
                       "broker(s) are registered.")
    return count


def described_configs(ctx: RequestContext, overrides: dict[str, str]) -> list[CreatableTopicConfigs]:
    static = static_broker_configs(ctx.config)
    return [
        CreatableTopicConfigs(name=c.name, value=c.value, read_only=c.read_only,
                              config_source=c.source, is_sensitive=c.sensitive)
        for c in describe_topic(overrides, ctx.broker_configs, static)
    ]


def _create_one(ctx: RequestContext, topic: Any, validate_only: bool,
                version: int) -> CreatableTopicResult:
    check_new_topic(ctx, topic.name)
    count = _partition_count(ctx, topic)
    configs = {c.name: c.value for c in topic.configs}
    validate_configs(configs)
    # Kafka's controller sets a null message on success (`ReplicationControlManager`).
    result = CreatableTopicResult(name=topic.name, error_code=0, error_message=None,
                                  num_partitions=count, replication_factor=1)
    if validate_only:
        result.topic_id = bytes(16)
    else:
        created = ctx.topics.create(topic.name, count, configs)  # type: ignore[arg-type]
        result.topic_id = created.topic_id
    if version >= 5:
        if authz.allowed(ctx, authz.Op.DESCRIBE_CONFIGS, authz.TOPIC, topic.name):
            result.configs = described_configs(ctx, configs)  # type: ignore[arg-type]
        else:
            result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return result


def _may_create(ctx: RequestContext, name: str) -> bool:
    """CREATE on the cluster, or on the topic (ControllerApis.createTopics)."""
    return authz.allowed_on_cluster(ctx, authz.Op.CREATE, log_if_denied=False) or \
        authz.allowed(ctx, authz.Op.CREATE, authz.TOPIC, name)


async def handle(ctx: RequestContext, header: RequestHeader, request: CreateTopicsRequest,
                 version: int) -> CreateTopicsResponse:
    counts = Counter(t.name for t in request.topics)
    results = []
    for topic in request.topics:
        if counts[topic.name] > 1:
            results.append(CreatableTopicResult(
                name=topic.name, error_code=ErrorCode.INVALID_REQUEST,
                error_message="Duplicate topic name."))
            continue
        if not _may_create(ctx, topic.name):
            results.append(CreatableTopicResult(
                name=topic.name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                error_message="Authorization failed."))
            continue
        try:
            results.append(_create_one(ctx, topic, request.validate_only, version))
        except ApiError as exc:
            results.append(CreatableTopicResult(name=topic.name, error_code=exc.code,
                                                error_message=exc.message))
    return CreateTopicsResponse(topics=results)
