"""GROUP config resources (type 32) of DescribeConfigs and IncrementalAlterConfigs.

Mirrors Kafka's `GroupConfig` / `GroupConfigManager` for the `consumer.*` names
(`coordinator.consumer.group_config`: session timeout and heartbeat interval, defaults and
bounds from the broker's `group.consumer.*` settings) and the `share.*` names
(`coordinator.share.configs`) and the `streams.*` names (`coordinator.streams.group_config`):
DescribeConfigs lists every name with its effective value
and source (GROUP_CONFIG 8 when set on the group, DEFAULT_CONFIG 5 otherwise);
IncrementalAlterConfigs SET/DELETE validate each name and range (INVALID_CONFIG) and,
unless `validate_only`, store the overrides and apply them to the group's live
share-partitions. The group need not exist, as in Kafka.
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.consumer import group_config
from groupcoord.coordinator.consumer.group_config import CONSUMER_CONFIG_DOCS
from groupcoord.coordinator.share.configs import SHARE_CONFIGS, broker_defaults, validate
from groupcoord.coordinator.streams import group_config as streams_config
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_configs import (
    DescribeConfigsResourceResult,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)

GROUP = 32
SET, DELETE = 0, 1
SOURCE_GROUP, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 8, 4, 5
# ConfigType: INT, BOOLEAN, STRING, LONG, LIST.
TYPES = {"int": 3, "bool": 1, "choice": 2, "string": 2, "long": 5, "list": 7}


def coordinator_config(ctx: RequestContext) -> GroupCoordinatorConfig:
    """The broker's group settings (`--group-config`), as the coordinator shards use."""
    return GroupCoordinatorConfig.from_properties(ctx.config.extra)


def _definitions(ctx: RequestContext) -> list[tuple[str, str | None, str, str]]:
    """(name, default, kind, doc) of every group config: consumer, share, streams names."""
    broker = coordinator_config(ctx)
    consumer_defaults = group_config.defaults(broker)
    share_defaults = broker_defaults(broker)
    streams_defaults = streams_config.defaults(broker)
    return [(name, consumer_defaults[name], "int", doc)
            for name, doc in CONSUMER_CONFIG_DOCS.items()] + [
        (d.name, share_defaults.get(d.name, d.default), d.kind, d.doc)
        for d in SHARE_CONFIGS.values()] + [
        (name, streams_defaults[name], d.kind, d.doc)
        for name, d in streams_config.STREAMS_CONFIGS.items() if not d.internal]


def _check_name(resource: Any) -> str:
    name = resource.resource_name or ""
    if not name:
        raise ApiError(ErrorCode.INVALID_GROUP_ID, "Group id must not be empty.")
    return name


def _check_alter_name(resource: Any) -> str:
    """`ControllerConfigurationValidator.validateGroupName`: "" would be the default group
    resource, which Kafka does not allow."""
    name = resource.resource_name or ""
    if not name:
        raise ApiError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    return name


async def describe(ctx: RequestContext, resource: Any, include_synonyms: bool,
                   include_documentation: bool) -> DescribeConfigsResult:
    result = DescribeConfigsResult(error_code=0, resource_type=GROUP,
                                   resource_name=resource.resource_name, configs=[])
    try:
        group_id = _check_name(resource)
    except ApiError as exc:
        result.error_code, result.error_message = exc.code, exc.message
        return result
    overrides = ctx.shares.group_configs.get(group_id)
    keys = resource.configuration_keys
    # A broker-level `group.streams.*` given at start-up is a static broker config, as Kafka
    # reports it (checked differentially); otherwise the value is Kafka's default.
    broker_set = ctx.config.extra
    for name, default, kind, doc in _definitions(ctx):
        if keys is not None and name not in keys:
            continue
        value = overrides.get(name)
        fallback = SOURCE_STATIC_BROKER if name in streams_config.STREAMS_CONFIGS \
            and f"group.{name}" in broker_set else SOURCE_DEFAULT
        source = SOURCE_GROUP if value is not None else fallback
        synonyms = []
        if include_synonyms and value is not None:
            synonyms.append(DescribeConfigsSynonym(name=name, value=value, source=SOURCE_GROUP))
        if include_synonyms:
            synonyms.append(DescribeConfigsSynonym(name=name, value=default, source=fallback))
        result.configs.append(DescribeConfigsResourceResult(
            name=name, value=value if value is not None else default,
            read_only=False, config_source=source, is_sensitive=False,
            config_type=TYPES[kind], synonyms=synonyms,
            documentation=doc if include_documentation else None))
    return result


def _validated(check: Any, *args: Any) -> None:
    try:
        check(*args)
    except ValueError as exc:
        raise ApiError(ErrorCode.INVALID_CONFIG, str(exc)) from None


async def alter(ctx: RequestContext, resource: Any, validate_only: bool) -> None:
    group_id = _check_alter_name(resource)
    changes: dict[str, str | None] = {}
    for op in resource.configs:
        if op.config_operation == SET:
            changes[op.name] = op.value
        elif op.config_operation == DELETE:
            changes[op.name] = None
        else:
            raise ApiError(ErrorCode.INVALID_CONFIG,
                           f"Config value append/subtract is not allowed for config "
                           f"[{op.name}] as it is not a list type")
        if op.name not in CONSUMER_CONFIG_DOCS and op.name not in streams_config.STREAMS_CONFIGS:
            _validated(validate, op.name, changes[op.name], coordinator_config(ctx))
    _validated(group_config.validate, coordinator_config(ctx),
               ctx.shares.group_configs.get(group_id), changes)
    _validated(streams_config.validate, coordinator_config(ctx),
               ctx.shares.group_configs.get(group_id), changes)
    session = changes.get("share.session.timeout.ms")
    interval = changes.get("share.heartbeat.interval.ms")
    if session is not None and interval is not None and int(interval) >= int(session):
        raise ApiError(ErrorCode.INVALID_CONFIG,
                       "share.heartbeat.interval.ms must be less than share.session.timeout.ms")
    if not validate_only:
        ctx.shares.group_configs.set(group_id, changes)
        ctx.shares.reconfigure(group_id)
