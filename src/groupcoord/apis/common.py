"""Helpers shared by the topic APIs: name validation, topic creation, ACL op bitfields.

Mirrors Kafka's `org.apache.kafka.common.internals.Topic` (legal names, collisions of
`.` and `_`) and the no-authorizer answer for authorized operations (every operation the
resource type supports).
"""

from __future__ import annotations

import re
from typing import Any

from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.apis.topic_configs import TOPIC_CONFIGS, validate_value
from groupcoord.security.acl import SUPPORTED_OPERATIONS, ResourceType
from groupcoord.wire.errors import ErrorCode

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")

# Authorized-operation bitfields without an authorizer: every operation the type supports.
TOPIC_OPERATIONS = sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.TOPIC])
CLUSTER_OPERATIONS = sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.CLUSTER])
GROUP_OPERATIONS = sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.GROUP])
UNKNOWN_OPERATIONS = -2147483648


def topic_name_error(name: str | None) -> str | None:
    """Why `name` is not a legal topic name, or None (Kafka's Topic.validate)."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters"
    if not _LEGAL.fullmatch(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than "
                "ASCII alphanumerics, '.', '_' and '-'")
    return None


def collision(ctx: RequestContext, name: str) -> str | None:
    """An existing topic whose name differs from `name` only by '.' vs '_'."""
    if "." not in name and "_" not in name:
        return None
    folded = name.replace(".", "_")
    for topic in ctx.topics.all():
        if topic.name != name and topic.name.replace(".", "_") == folded:
            return topic.name
    return None


def validate_configs(configs: dict[str, str | None]) -> None:
    """Raise ApiError(INVALID_CONFIG) for an unknown topic config or a bad value."""
    for key, value in configs.items():
        definition = TOPIC_CONFIGS.get(key)
        if definition is None:
            raise ApiError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        problem = validate_value(definition, value)
        if problem:
            raise ApiError(ErrorCode.INVALID_CONFIG, problem)


def check_new_topic(ctx: RequestContext, name: str) -> None:
    """Raise the ApiError Kafka gives for creating `name`, if any."""
    problem = topic_name_error(name)
    if problem:
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    if ctx.topics.get(name) is not None:
        raise ApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    other = collision(ctx, name)
    if other:
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                       f"Topic '{name}' collides with existing topic: {other}")


def auto_create(ctx: RequestContext, name: str) -> Any | None:
    """Create `name` with the broker defaults if auto-creation allows it; the topic or None."""
    if not ctx.config.auto_create_topics:
        return None
    try:
        check_new_topic(ctx, name)
    except ApiError:
        return None
    return ctx.topics.create(name, ctx.config.default_partitions, {})
