"""The authorization checks API handlers make, as Kafka's `AuthHelper` does them.

Every handler asks through these helpers: `allowed` (`authorize`), `require_*` (raise the
API's Kafka error code when denied, so the dispatcher answers the request's error
response), `authorized` (`filterByAuthorized`: the subset of names allowed) and
`operations` (`authorizedOperations`: the bitfield of allowed operations). Without an
authorizer (`--authorizer none`) everything is allowed and `operations` returns every
operation the resource type supports, as Kafka without `authorizer.class.name`.

ACL hosts are matched against the connection's bare address (`ctx.client_address`). A
denial of something the request named is logged at INFO on `groupcoord.authorizer` in the
words of Kafka's `kafka.authorizer.logger` (who, what, from which host, on which resource,
for which request, by which rule); the checks that only compute authorized operations or
filter what a pattern matched, and first checks that fall back to another, log nothing,
as Kafka's `logIfDenied=false`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from groupcoord.apis import topic_configs as cfg
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.security.acl import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType
from groupcoord.security.authorizer import StandardAuthorizer
from groupcoord.wire.api_keys import ApiKey
from groupcoord.wire.errors import ErrorCode

Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID


audit_log = logging.getLogger("groupcoord.authorizer")


def enabled(ctx: RequestContext) -> bool:
    return ctx.authorizer is not None


def _camel(enum_name: str) -> str:
    return "".join(word.capitalize() for word in enum_name.split("_"))


def _log_denial(ctx: RequestContext, auth: StandardAuthorizer, principal: str,
                op: AclOperation, resource_type: ResourceType, name: str,
                ref_count: int) -> None:
    """`StandardAuthorizerData.buildAuditMessage` for a denial."""
    try:
        request = _camel(ApiKey(ctx.api_key).name)
    except ValueError:
        request = str(ctx.api_key)
    host = ctx.client_address
    audit_log.info(
        "Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s "
        "for request = %s with resourceRefCount = %d based on rule %s", principal, op.name,
        host, _camel(resource_type.name), name, request, ref_count,
        auth.denial_rule(principal, host, op, resource_type, name))


def _decide(ctx: RequestContext, auth: StandardAuthorizer, principal: str, op: AclOperation,
            resource_type: ResourceType, name: str, log_if_denied: bool,
            ref_count: int = 1) -> bool:
    if auth.authorize(principal, ctx.client_address, op, resource_type, name):
        return True
    if log_if_denied and audit_log.isEnabledFor(logging.INFO):
        _log_denial(ctx, auth, principal, op, resource_type, name, ref_count)
    return False


def allowed(ctx: RequestContext, op: AclOperation, resource_type: ResourceType, name: str, *,
            log_if_denied: bool = True) -> bool:
    auth = ctx.authorizer
    return auth is None or _decide(ctx, auth, str(ctx.principal), op, resource_type, name,
                                   log_if_denied)


def allowed_on_cluster(ctx: RequestContext, op: AclOperation, *,
                       log_if_denied: bool = True) -> bool:
    return allowed(ctx, op, CLUSTER, CLUSTER_NAME, log_if_denied=log_if_denied)


def authorized(ctx: RequestContext, op: AclOperation, resource_type: ResourceType,
               names: Iterable[str], *, log_if_denied: bool = True) -> set[str]:
    """The distinct names the principal may perform `op` on (`filterByAuthorized`; a
    denial is logged with how often the request named the resource)."""
    auth = ctx.authorizer
    listed = list(names)
    unique = set(listed)
    if auth is None:
        return unique
    principal, host = str(ctx.principal), ctx.client_address
    granted = set()
    for n in unique:
        if auth.authorize(principal, host, op, resource_type, n):
            granted.add(n)
        elif log_if_denied and audit_log.isEnabledFor(logging.INFO):
            _log_denial(ctx, auth, principal, op, resource_type, n, listed.count(n))
    return granted


def require(ctx: RequestContext, op: AclOperation, resource_type: ResourceType, name: str,
            code: int) -> None:
    if not allowed(ctx, op, resource_type, name):
        raise ApiError(code)


def require_group(ctx: RequestContext, op: AclOperation, group_id: str) -> None:
    require(ctx, op, GROUP, group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)


def require_cluster(ctx: RequestContext, op: AclOperation) -> None:
    """`AuthHelper.authorizeClusterOperation`."""
    require(ctx, op, CLUSTER, CLUSTER_NAME, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


def require_transactional_id(ctx: RequestContext, op: AclOperation, transactional_id: str) -> None:
    require(ctx, op, TRANSACTIONAL_ID, transactional_id,
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)


def operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """`AuthHelper.authorizedOperations`."""
    auth = ctx.authorizer
    if auth is None:
        return sum(1 << int(op) for op in SUPPORTED_OPERATIONS[resource_type])
    return int(auth.authorized_operations(str(ctx.principal), ctx.client_address, resource_type,
                                          name))


def may_write_idempotently(ctx: RequestContext) -> bool:
    """InitProducerId without a transactional id: IDEMPOTENT_WRITE on the cluster, or WRITE
    on at least one topic (`authorizeByResourceType`), as `handleInitProducerIdRequest`."""
    auth = ctx.authorizer
    if auth is None or allowed_on_cluster(ctx, Op.IDEMPOTENT_WRITE, log_if_denied=False):
        return True
    return bool(auth.authorize_by_resource_type(str(ctx.principal), ctx.client_address,
                                                Op.WRITE, TOPIC))


def describable_topics_filter(ctx: RequestContext) -> Callable[[Iterable[str]], set[str]] | None:
    """The `OpContext.topic_filter` of this request: None without an authorizer."""
    if not enabled(ctx):
        return None
    return lambda names: authorized(ctx, Op.DESCRIBE, TOPIC, names, log_if_denied=False)


def require_subscribed_topics(ctx: RequestContext, names: list[str] | None) -> bool:
    """ConsumerGroupHeartbeat / ShareGroupHeartbeat: every subscribed topic name must be
    describable, else the heartbeat answers TOPIC_AUTHORIZATION_FAILED (True here)."""
    if not names or not enabled(ctx):
        return False
    return len(authorized(ctx, Op.DESCRIBE, TOPIC, names)) < len(set(names))


def hide_undescribable_topics(ctx: RequestContext, groups: list[Any], assignments: Any) -> None:
    """ConsumerGroupDescribe / ShareGroupDescribe: a described group any of whose members'
    `assignments(member)` names a topic the principal may not describe is answered as
    TOPIC_AUTHORIZATION_FAILED without members (only with an authorizer, as Kafka)."""
    if not enabled(ctx):
        return
    names = {tp.topic_name for g in groups for m in g.members for a in assignments(m)
             for tp in a.topic_partitions}
    ok = authorized(ctx, Op.DESCRIBE, TOPIC, names)
    for g in groups:
        if any(tp.topic_name not in ok for m in g.members for a in assignments(m)
               for tp in a.topic_partitions):
            fresh = type(g)(group_id=g.group_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            error_message="The group has described topic(s) that the client "
                                          "is not authorized to describe.")
            # Reset every field in place (the response holds `g`): a walk over the slots.
            for slot in g.__slots__:
                setattr(g, slot, getattr(fresh, slot))


# ConfigResource.Type -> the resource Kafka authorizes and its error (BROKER, BROKER_LOGGER
# and CLIENT_METRICS are cluster-wide), as `ConfigHelper` / `ControllerApis.authorizeAlterResource`.
_CONFIG_RESOURCES = {
    cfg.RESOURCE_TOPIC: (TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    cfg.RESOURCE_BROKER: (CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    cfg.RESOURCE_BROKER_LOGGER: (CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    cfg.RESOURCE_CLIENT_METRICS: (CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    cfg.RESOURCE_GROUP: (GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED),
}
# `Errors.message()` of the authorization errors, which Kafka's `ApiError(Errors)` carries.
MESSAGES = {
    int(ErrorCode.TOPIC_AUTHORIZATION_FAILED): "Topic authorization failed.",
    int(ErrorCode.GROUP_AUTHORIZATION_FAILED): "Group authorization failed.",
    int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED): "Cluster authorization failed.",
}


def config_resource_error(ctx: RequestContext, op: AclOperation, config_type: int, name: str) -> int:
    """0, or the error for a config resource the principal may not describe/alter."""
    entry = _CONFIG_RESOURCES.get(config_type)
    if entry is None:
        return 0
    resource_type, code = entry
    target = CLUSTER_NAME if resource_type == CLUSTER else name
    return 0 if allowed(ctx, op, resource_type, target) else int(code)
