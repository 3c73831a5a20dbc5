"""Helpers shared by the share APIs: topics image, group overrides, ack validation,
and the v0 codec switch.

`validate_ack_batches` mirrors `KafkaApis.validateAcknowledgementBatches`: first <= last,
ascending and non-overlapping batches, a non-empty type list of length 1 or
last - first + 1, every type in [0..3] (or [0..4] with renew), and type 4 only in a
renew acknowledgement.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.apis.group_support import group_overrides
from groupcoord.apis.nodes import leads
from groupcoord.coordinator.topics import TopicsImage
from groupcoord.wire.errors import ErrorCode

SHARE_MIN_VERSION = 0
MAX_MEMBER_ID_LENGTH = 36
RENEW = 4


def topics_image(ctx: RequestContext) -> TopicsImage:
    """The broker's user topics as the share coordinator resolves names against."""
    topics = [(t.name, t.topic_id, t.num_partitions) for t in ctx.topics.all()
              if not t.internal]
    return TopicsImage.of(topics, 0)


def member_id_valid(member_id: str | None) -> bool:
    return bool(member_id) and len(member_id or "") <= MAX_MEMBER_ID_LENGTH


def member_request_valid(ctx: RequestContext, group_id: str, member_id: str) -> bool:
    """ShareFetch / ShareAcknowledge's checks in Kafka's order: a group id (else
    INVALID_REQUEST), READ on the group (raises GROUP_AUTHORIZATION_FAILED), then a member
    id of at most 36 characters (else INVALID_REQUEST)."""
    if not group_id:
        return False
    authz.require_group(ctx, authz.Op.READ, group_id)
    return member_id_valid(member_id)


def validate_ack_batches(batches: Sequence[Any], renew_allowed: bool, is_renew_ack: bool
                         ) -> int:
    """The partition error for a list of AcknowledgementBatch, or NONE."""
    top = RENEW if renew_allowed else RENEW - 1
    previous_last = -1
    for batch in batches:
        first, last, types = batch.first_offset, batch.last_offset, batch.acknowledge_types
        if first > last or first <= previous_last:
            return ErrorCode.INVALID_REQUEST
        if not types or (len(types) != 1 and len(types) != last - first + 1):
            return ErrorCode.INVALID_REQUEST
        for kind in types:
            if not 0 <= kind <= top or (kind == RENEW and not is_renew_ack):
                return ErrorCode.INVALID_REQUEST
        previous_last = last
    return ErrorCode.NONE


def unreadable(ctx: RequestContext, topic_ids: Iterable[bytes]) -> frozenset[bytes]:
    """The known topic ids the principal may not READ (share consumers need READ)."""
    if not authz.enabled(ctx):
        return frozenset()
    infos = {tid: ctx.topics.by_id(tid) for tid in set(topic_ids)}
    names = {tid: info.name for tid, info in infos.items() if info is not None}
    readable = authz.authorized(ctx, authz.Op.READ, authz.TOPIC, names.values())
    return frozenset(tid for tid, name in names.items() if name not in readable)


def resolve(ctx: RequestContext, topic_id: bytes, index: int,
            denied: frozenset[bytes] = frozenset()) -> tuple[Any, int]:
    """(topic, NONE) or (None, UNKNOWN_TOPIC_ID / TOPIC_AUTHORIZATION_FAILED /
    UNKNOWN_TOPIC_OR_PARTITION), in Kafka's order."""
    topic = ctx.topics.by_id(topic_id)
    if topic is None or topic.internal:
        return None, ErrorCode.UNKNOWN_TOPIC_ID
    if topic_id in denied:
        return None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if not 0 <= index < topic.num_partitions:
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not leads(ctx, topic.name, index):
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
    return topic, ErrorCode.NONE


async def apply_acks(ctx: RequestContext, group_id: str, member_id: str,
                     acks: dict[tuple[bytes, int], list[Any]], renew_allowed: bool,
                     is_renew_ack: bool, denied: frozenset[bytes] = frozenset()
                     ) -> dict[tuple[bytes, int], int]:
    """Validate and apply acknowledgement batches per partition; the error per partition."""
    shares = ctx.shares
    results: dict[tuple[bytes, int], int] = {}
    for (topic_id, index), batches in acks.items():
        topic, code = resolve(ctx, topic_id, index, denied)
        if code == ErrorCode.NONE:
            code = validate_ack_batches(batches, renew_allowed, is_renew_ack)
        if code == ErrorCode.NONE:
            try:
                sp = await shares.partition(group_id, topic, index)
                code = await shares.acknowledge(sp, topic.name, member_id, batches)
            except ApiError as exc:
                code = exc.code
        results[(topic_id, index)] = int(code)
    return results


def renew_allowed(ctx: RequestContext, group_id: str, version: int) -> bool:
    if version < 2:
        return False
    value = group_overrides(ctx, group_id).get("share.renew.acknowledge.enable", "true")
    return value.lower() == "true"
