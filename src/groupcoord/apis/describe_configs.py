"""DescribeConfigs (key 32, v1-v4): topic and broker configs with sources and synonyms.

Mirrors `ConfigHelper.describeConfigs`: TOPIC (2) lists every topic config with its value
and source (topic override, dynamic broker, static broker, default); BROKER (4) accepts
the empty name (cluster defaults) or this node's id, else INVALID_REQUEST. `include_synonyms`
adds the precedence chain (v1+), `include_documentation` the documentation (v3+). GROUP
(32) resources are delegated to `groupcoord.apis.group_configs.describe`; other types ->
INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.common import topic_name_error
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.apis.topic_configs import (
    BROKER_CONFIGS,
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    ResolvedConfig,
    describe_topic,
    resolve_broker_config,
    static_broker_configs,
)
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 1, 4


def _entry(c: ResolvedConfig, synonyms: bool) -> DescribeConfigsResourceResult:
    return DescribeConfigsResourceResult(
        name=c.name, value=c.value, read_only=c.read_only, config_source=c.source,
        is_sensitive=c.sensitive, config_type=c.type,
        # Kafka sends documentation only when asked, and null otherwise; this broker keeps
        # no documentation for topic and broker configs, so it is always null here.
        documentation=None,
        synonyms=[DescribeConfigsSynonym(name=n, value=v, source=s) for n, v, s in c.synonyms]
        if synonyms else [])


def _configs_for(ctx: RequestContext, resource: Any) -> list[ResolvedConfig]:
    static = static_broker_configs(ctx.config)
    if resource.resource_type == RESOURCE_TOPIC:
        problem = topic_name_error(resource.resource_name)
        if problem:
            raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        topic = ctx.topics.get(resource.resource_name)
        if topic is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           f"Topic {resource.resource_name} does not exist.")
        return describe_topic(topic.configs, ctx.broker_configs, static)
    name = resource.resource_name
    if name not in ("", str(ctx.node_id)):
        raise ApiError(ErrorCode.INVALID_REQUEST,
                       f"Unexpected broker id, expected {ctx.node_id} or empty string, "
                       f"but received {name}")
    return [resolve_broker_config(d, ctx.broker_configs, static) for d in BROKER_CONFIGS.values()]


def _describe(ctx: RequestContext, resource: Any, synonyms: bool) -> DescribeConfigsResult:
    result = DescribeConfigsResult(error_code=0, resource_type=resource.resource_type,
                                   resource_name=resource.resource_name, configs=[])
    try:
        if resource.resource_type not in (RESOURCE_TOPIC, RESOURCE_BROKER):
            raise ApiError(ErrorCode.INVALID_REQUEST,
                           f"Unsupported resource type {resource.resource_type}")
        configs = _configs_for(ctx, resource)
    except ApiError as exc:
        result.error_code, result.error_message = exc.code, exc.message
        return result
    keys = resource.configuration_keys
    result.configs = [_entry(c, synonyms) for c in configs if keys is None or c.name in keys]
    return result


async def handle(ctx: RequestContext, header: RequestHeader, request: DescribeConfigsRequest,
                 version: int) -> DescribeConfigsResponse:
    results = []
    denied = []
    for resource in request.resources:
        error = authz.config_resource_error(ctx, authz.Op.DESCRIBE_CONFIGS, resource.resource_type,
                                            resource.resource_name)
        if error:
            # Kafka answers these after the described resources.
            denied.append(DescribeConfigsResult(
                error_code=error, error_message=authz.MESSAGES[error], configs=[],
                resource_type=resource.resource_type, resource_name=resource.resource_name))
            continue
        if resource.resource_type == RESOURCE_GROUP:
            # Imported with the first GROUP resource: its coordinator config parsing is
            # no cost to topic and broker requests.
            from groupcoord.apis import group_configs

            results.append(await group_configs.describe(
                ctx, resource, request.include_synonyms, request.include_documentation))
        else:
            results.append(_describe(ctx, resource, request.include_synonyms))
    return DescribeConfigsResponse(results=results + denied)
