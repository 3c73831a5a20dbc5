"""ShareAcknowledge (API 79, v0-2): acknowledge acquired records without fetching
(`KafkaApis.handleShareAcknowledgeRequest`, `SharePartitionManager.acknowledge`).

The session must exist: epoch 0 is INVALID_SHARE_SESSION_EPOCH, epoch -1 closes the
session after the acknowledgements are applied and releases what the member still
holds. Acknowledging a record the member does not hold is INVALID_RECORD_STATE for that
partition. v2 adds renew acknowledgements and AcquisitionLockTimeoutMs in the response.
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import share_support as support
from groupcoord.apis.context import RequestContext
from groupcoord.apis.share_v0_codec import as_version, with_v0
from groupcoord.coordinator.share.sessions import FINAL_EPOCH, ShareSessionError
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.share_acknowledge import (
    PartitionData,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareAcknowledgeTopicResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = support.SHARE_MIN_VERSION, 2
REQUEST = with_v0(ShareAcknowledgeRequest)
RESPONSE = with_v0(ShareAcknowledgeResponse)


def error_response(request: Any, version: int, code: int) -> ShareAcknowledgeResponse:
    return as_version(ShareAcknowledgeResponse(error_code=code), version)


async def handle(ctx: RequestContext, header: RequestHeader, request: ShareAcknowledgeRequest,
                 version: int) -> ShareAcknowledgeResponse:
    group_id, member_id = request.group_id or "", request.member_id or ""
    if not support.member_request_valid(ctx, group_id, member_id):
        return error_response(request, version, ErrorCode.INVALID_REQUEST)
    try:
        session = ctx.shares.sessions.acknowledge_context(group_id, member_id,
                                                          request.share_session_epoch)
    except ShareSessionError as exc:
        return error_response(request, version, exc.code)
    acks = {(bytes(t.topic_id), p.partition_index): p.acknowledgement_batches
            for t in request.topics for p in t.partitions}
    is_renew = version >= 2 and request.is_renew_ack
    codes = await support.apply_acks(ctx, group_id, member_id, acks,
                                     support.renew_allowed(ctx, group_id, version), is_renew,
                                     support.unreadable(ctx, (k[0] for k in acks)))
    if request.share_session_epoch == FINAL_EPOCH:
        await ctx.shares.release_session(session)
    by_topic: dict[bytes, list[PartitionData]] = {}
    for (topic_id, index), code in codes.items():
        by_topic.setdefault(topic_id, []).append(
            PartitionData(partition_index=index, error_code=code))
    response = ShareAcknowledgeResponse(
        acquisition_lock_timeout_ms=ctx.shares.lock_duration_ms(group_id),
        responses=[ShareAcknowledgeTopicResponse(topic_id=t, partitions=parts)
                   for t, parts in by_topic.items()])
    return as_version(response, version)
