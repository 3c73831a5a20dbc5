"""DeleteTopics (key 20, v1-v6): delete topics by name, or by topic id from v6.

Mirrors `ControllerApis.deleteTopics`: unknown names -> UNKNOWN_TOPIC_OR_PARTITION,
unknown ids -> UNKNOWN_TOPIC_ID, a topic named twice (or by both name and id) ->
INVALID_REQUEST, internal topics -> INVALID_REQUEST ("Can't delete internal topic").
Deleting drops the partition logs and the broker's per-partition soft state.
"""

from __future__ import annotations

from collections import Counter

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 1, 6
UUID_ZERO = bytes(16)


def _targets(request: DeleteTopicsRequest, version: int) -> list[tuple[str | None, bytes]]:
    if version >= 6:
        return [(t.name, t.topic_id) for t in request.topics]
    return [(name, UUID_ZERO) for name in request.topic_names]


def _may(ctx: RequestContext, op: authz.AclOperation, name: str) -> bool:
    """DELETE on the cluster allows deleting (and describing) every topic."""
    return authz.allowed_on_cluster(ctx, authz.Op.DELETE) or authz.allowed(ctx, op, authz.TOPIC, name)


def _delete_one(ctx: RequestContext, name: str | None, topic_id: bytes,
                duplicate: bool) -> DeletableTopicResult:
    result = DeletableTopicResult(name=name, topic_id=topic_id, error_code=0)
    if duplicate:
        result.error_code = ErrorCode.INVALID_REQUEST
        result.error_message = "Duplicate topic name or id."
        return result
    if name is not None and topic_id != UUID_ZERO:
        result.error_code = ErrorCode.INVALID_REQUEST
        result.error_message = "Only one of name or topic id may be given."
        return result
    if name is not None and not _may(ctx, authz.Op.DESCRIBE, name):
        result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return result
    topic = ctx.topics.get(name) if name is not None else ctx.topics.by_id(topic_id)
    if topic is None:
        result.error_code = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name is not None
                             else ErrorCode.UNKNOWN_TOPIC_ID)
        return result
    if not _may(ctx, authz.Op.DELETE, topic.name):
        # A topic named by id is named back only to who may describe it (ControllerApis).
        if name is None and _may(ctx, authz.Op.DESCRIBE, topic.name):
            result.name = topic.name
        result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return result
    if topic.internal:
        result.error_code = ErrorCode.INVALID_REQUEST
        result.error_message = f"Can't delete internal topic {topic.name}"
        return result
    result.name, result.topic_id = topic.name, topic.topic_id
    ctx.topics.delete(topic.name)
    ctx.forget_partitions(topic.name, topic.num_partitions)
    return result


async def handle(ctx: RequestContext, header: RequestHeader, request: DeleteTopicsRequest,
                 version: int) -> DeleteTopicsResponse:
    targets = _targets(request, version)
    seen = Counter(name if name is not None else topic_id for name, topic_id in targets)
    responses = [
        _delete_one(ctx, name, topic_id, seen[name if name is not None else topic_id] > 1)
        for name, topic_id in targets
    ]
    return DeleteTopicsResponse(responses=responses)
