"""IncrementalAlterConfigs (key 44, v0-v1): change topic and broker configs.

Mirrors `ConfigAdminManager` / `ControllerConfigurationValidator`: operations SET (0),
DELETE (1), APPEND (2) and SUBTRACT (3, both for list configs only); unknown topics ->
UNKNOWN_TOPIC_OR_PARTITION; unknown keys or bad values -> INVALID_CONFIG; a resource
listed twice -> INVALID_REQUEST; `validate_only` changes nothing. Topic overrides persist
with the topic; broker-level changes are dynamic configs (persisted in the data dir,
reported with source DYNAMIC_BROKER_CONFIG; read-only keys such as node.id -> INVALID_CONFIG). GROUP resources go to
`groupcoord.apis.group_configs.alter`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.common import validate_configs
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.apis.topic_configs import (
    BROKER_CONFIGS,
    READ_ONLY_BROKER_CONFIGS,
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    TOPIC_CONFIGS,
    TYPE_LIST,
    validate_value,
)
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.incremental_alter_configs import (
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 1
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _apply_ops(current: dict[str, str], ops: list[Any], defs: dict[str, Any]) -> dict[str, str | None]:
    """The changes (None = remove the override) the operations make to `current`."""
    changes: dict[str, str | None] = {}
    for op in ops:
        definition = defs.get(op.name)
        if definition is None:
            raise ApiError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {op.name}")
        if op.config_operation == SET:
            changes[op.name] = op.value
        elif op.config_operation == DELETE:
            changes[op.name] = None
        elif op.config_operation in (APPEND, SUBTRACT):
            if definition.type != TYPE_LIST:
                raise ApiError(ErrorCode.INVALID_CONFIG,
                               f"Config value append/subtract is not allowed for config "
                               f"[{op.name}] as it is not a list type")
            base = changes.get(op.name, current.get(op.name, definition.default)) or ""
            items = [v for v in base.split(",") if v]
            new = [v for v in (op.value or "").split(",") if v]
            if op.config_operation == APPEND:
                items += [v for v in new if v not in items]
            else:
                items = [v for v in items if v not in new]
            changes[op.name] = ",".join(items)
        else:
            raise ApiError(ErrorCode.INVALID_REQUEST,
                           f"Unknown config operation {op.config_operation}")
    return changes


def _alter(ctx: RequestContext, resource: Any, validate_only: bool) -> None:
    if resource.resource_type == RESOURCE_TOPIC:
        topic = ctx.topics.get(resource.resource_name)
        if topic is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           f"Topic {resource.resource_name} does not exist.")
        changes = _apply_ops(topic.configs, resource.configs, TOPIC_CONFIGS)
        validate_configs({k: v for k, v in changes.items() if v is not None})
        if not validate_only:
            ctx.topics.set_configs(topic.name, changes)
        return
    if resource.resource_type != RESOURCE_BROKER:
        raise ApiError(ErrorCode.INVALID_REQUEST,
                       f"Unsupported resource type {resource.resource_type}")
    if resource.resource_name not in ("", str(ctx.node_id)):
        raise ApiError(ErrorCode.INVALID_REQUEST,
                       f"Unexpected broker id {resource.resource_name}")
    dynamic = ctx.broker_configs
    changes = _apply_ops(dynamic, resource.configs, BROKER_CONFIGS)
    for key, value in changes.items():
        definition = BROKER_CONFIGS[key]
        problem = validate_value(definition, value) if value is not None else None
        if problem:
            raise ApiError(ErrorCode.INVALID_CONFIG, problem)
        if key in READ_ONLY_BROKER_CONFIGS:
            raise ApiError(ErrorCode.INVALID_CONFIG,
                           f"Cannot update these configs dynamically: [{key}]")
    if not validate_only:
        for key, value in changes.items():
            if value is None:
                dynamic.pop(key, None)
            else:
                dynamic[key] = value


def error_response(request: IncrementalAlterConfigsRequest, version: int,
                   code: int) -> IncrementalAlterConfigsResponse:
    """Kafka's `IncrementalAlterConfigsRequest.getErrorResponse`: every resource fails."""
    return IncrementalAlterConfigsResponse(responses=[
        AlterConfigsResourceResponse(error_code=code, resource_type=r.resource_type,
                                     resource_name=r.resource_name)
        for r in request.resources])


async def handle(ctx: RequestContext, header: RequestHeader, request: IncrementalAlterConfigsRequest,
                 version: int) -> IncrementalAlterConfigsResponse:
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    responses = []
    for resource in request.resources:
        # A success carries a null message, as Kafka's `ApiError.NONE`.
        result = AlterConfigsResourceResponse(error_code=0, error_message=None,
                                              resource_type=resource.resource_type,
                                              resource_name=resource.resource_name)
        try:
            if seen[(resource.resource_type, resource.resource_name)] > 1:
                raise ApiError(ErrorCode.INVALID_REQUEST,
                               "Duplicate resource in the request.")
            denied = authz.config_resource_error(ctx, authz.Op.ALTER_CONFIGS,
                                                 resource.resource_type, resource.resource_name)
            if denied:
                raise ApiError(denied, authz.MESSAGES[denied])
            if resource.resource_type == RESOURCE_GROUP:
                from groupcoord.apis import group_configs

                await group_configs.alter(ctx, resource, request.validate_only)
            else:
                _alter(ctx, resource, request.validate_only)
        except ApiError as exc:
            result.error_code, result.error_message = exc.code, exc.message
        responses.append(result)
    return IncrementalAlterConfigsResponse(responses=responses)
