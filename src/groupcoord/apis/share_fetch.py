"""ShareFetch (API 78, v0-2): acquire records for a share-group member, acknowledging
piggy-backed batches first (`KafkaApis.handleShareFetchRequest`,
`SharePartitionManager.fetchMessages`).

Order: validate the member id; update the share session (epoch rules in
`coordinator.share.sessions`); apply acknowledgements; on epoch -1 release the member's
records and return; otherwise acquire from the session's partitions, parking the request
(long poll) until something is acquired or MaxWaitMs passes. v0 (Kafka 3.9) has no
MaxRecords, so the Java consumer's default of 500 applies; v2 IsRenewAck fetches nothing,
and so does MaxBytes 0 or MaxRecords 0 (answered at once).
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import share_support as support
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.apis.share_v0_codec import as_version, with_v0
from groupcoord.coordinator.share.sessions import FINAL_EPOCH, ShareSessionError
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.share_fetch import (
    AcquiredRecords,
    PartitionData,
    ShareFetchableTopicResponse,
    ShareFetchRequest,
    ShareFetchResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = support.SHARE_MIN_VERSION, 2
REQUEST = with_v0(ShareFetchRequest)
RESPONSE = with_v0(ShareFetchResponse)
DEFAULT_MAX_RECORDS = 500
RECORD_LIMIT_MODE = 1  # ShareAcquireMode: 0 batch-optimized, 1 record-limit

Results = dict[tuple[bytes, int], PartitionData]


def error_response(request: Any, version: int, code: int) -> ShareFetchResponse:
    return as_version(ShareFetchResponse(error_code=code), version)


async def handle(ctx: RequestContext, header: RequestHeader, request: ShareFetchRequest,
                 version: int) -> ShareFetchResponse:
    group_id, member_id = request.group_id or "", request.member_id or ""
    if not support.member_request_valid(ctx, group_id, member_id):
        return error_response(request, version, ErrorCode.INVALID_REQUEST)
    acks = {(bytes(t.topic_id), p.partition_index): p.acknowledgement_batches
            for t in request.topics for p in t.partitions if p.acknowledgement_batches}
    added = [(bytes(t.topic_id), p.partition_index)
             for t in request.topics for p in t.partitions]
    forgotten = [(bytes(t.topic_id), p) for t in request.forgotten_topics_data
                 for p in t.partitions]
    try:
        session = ctx.shares.sessions.fetch_context(
            group_id, member_id, request.share_session_epoch, bool(acks), added, forgotten,
            ctx.connection_id)
    except ShareSessionError as exc:
        return error_response(request, version, exc.code)
    is_renew = version >= 2 and request.is_renew_ack
    results: Results = {}
    denied = support.unreadable(ctx, [tid for tid, _ in session.partitions] + [k[0] for k in acks])
    ack_codes = await support.apply_acks(ctx, group_id, member_id, acks,
                                         support.renew_allowed(ctx, group_id, version),
                                         is_renew, denied)
    for key, code in ack_codes.items():
        results[key] = PartitionData(partition_index=key[1], acknowledge_error_code=code)
    if request.share_session_epoch == FINAL_EPOCH:
        await ctx.shares.release_session(session)
    elif not is_renew:
        await _fetch(ctx, request, version, session, results, denied)
    return _response(ctx, group_id, version, results)


def _nothing_requested(request: Any, version: int) -> bool:
    """`SharePartitionManager.processShareFetch`: MaxRecords 0 or MaxBytes 0 asks for no
    data, so the fetch completes at once with no partitions (and no long poll)."""
    return request.max_bytes == 0 or (version >= 1 and request.max_records == 0)


async def _fetch(ctx: RequestContext, request: Any, version: int, session: Any, results: Results,
                 denied: frozenset[bytes]) -> None:
    if _nothing_requested(request, version):
        return
    deadline = ctx.now_ms() + max(0, request.max_wait_ms)
    while True:
        got, keys = await _acquire_all(ctx, request, version, session, results, denied)
        remaining = deadline - ctx.now_ms()
        if got or remaining <= 0 or not keys:
            return
        await ctx.wait_for_data(keys, remaining)


async def _acquire_all(ctx: RequestContext, request: Any, version: int, session: Any,
                       results: Results, denied: frozenset[bytes]
                       ) -> tuple[bool, list[tuple[str, int]]]:
    """One pass over the session's partitions; (anything acquired, wake-up keys)."""
    budget = request.max_records if version >= 1 and request.max_records > 0 \
        else DEFAULT_MAX_RECORDS
    max_bytes = request.max_bytes if request.max_bytes > 0 else 2**31 - 1
    partitions = list(session.partitions)
    if partitions:
        session.rotation = (session.rotation + 1) % len(partitions)
        partitions = partitions[session.rotation:] + partitions[:session.rotation]
    record_limit = version >= 2 and request.share_acquire_mode == RECORD_LIMIT_MODE
    batch_size = request.batch_size if version >= 1 else 0
    got, keys = False, []
    for topic_id, index in partitions:
        topic, code = support.resolve(ctx, topic_id, index, denied)
        data = results.get((topic_id, index))
        if code != 0:
            results[(topic_id, index)] = data or PartitionData(partition_index=index)
            results[(topic_id, index)].error_code = code
            continue
        keys.append((topic.name, index))
        if budget <= 0 or max_bytes <= 0:
            continue
        try:
            sp = await ctx.shares.partition(request.group_id, topic, index)
            records, acquired = await ctx.shares.acquire(sp, topic.name, request.member_id,
                                                         budget, max_bytes, record_limit,
                                                         batch_size)
        except ApiError as exc:
            # The share state could not be written: nothing was acquired (retriable).
            data = results.setdefault((topic_id, index), PartitionData(partition_index=index))
            data.error_code = int(exc.code)
            continue
        if not acquired:
            continue
        got = True
        data = results.setdefault((topic_id, index), PartitionData(partition_index=index))
        data.records = records
        data.acquired_records = [AcquiredRecords(first_offset=a.first_offset,
                                                 last_offset=a.last_offset,
                                                 delivery_count=a.delivery_count)
                                 for a in acquired]
        budget -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
        max_bytes -= len(records) if records is not None else 0
    return got, keys


def _response(ctx: RequestContext, group_id: str, version: int, results: Results) -> ShareFetchResponse:
    by_topic: dict[bytes, list[PartitionData]] = {}
    for (topic_id, _index), data in results.items():
        if data.records is None:
            # Kafka always sends a (possibly empty) record set; librdkafka rejects null.
            data.records = b""
        by_topic.setdefault(topic_id, []).append(data)
    response = ShareFetchResponse(
        acquisition_lock_timeout_ms=ctx.shares.lock_duration_ms(group_id),
        responses=[ShareFetchableTopicResponse(topic_id=t, partitions=parts)
                   for t, parts in by_topic.items()])
    return as_version(response, version)
