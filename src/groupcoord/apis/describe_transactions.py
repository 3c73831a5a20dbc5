"""DescribeTransactions (key 65, v0): state, producer, timeout and partitions per id.

Mirrors `TransactionCoordinator.handleDescribeTransactions`: an empty id ->
INVALID_REQUEST, an unknown (or Dead) one -> TRANSACTIONAL_ID_NOT_FOUND.
"""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    TopicData,
    TransactionState,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 0


def describe_one(ctx: RequestContext, tid: str) -> TransactionState:
    state = TransactionState(transactional_id=tid, error_code=0)
    if not tid:
        state.error_code = ErrorCode.INVALID_REQUEST
        return state
    try:
        md = ctx.transactions.metadata(tid)
    except ApiError as exc:  # the transactional id's shard is loading or not ours
        state.error_code = exc.code
        return state
    if md is None or md.state.kafka_name == "Dead":
        state.error_code = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        return state
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(md.partitions):
        by_topic.setdefault(topic, []).append(partition)
    state.producer_id = md.producer_id
    state.producer_epoch = md.producer_epoch
    state.transaction_state = md.state.kafka_name
    state.transaction_timeout_ms = md.timeout_ms
    state.transaction_start_time_ms = md.start_ms
    state.topics = [TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]
    return state


async def handle(ctx: RequestContext, header: RequestHeader, request: DescribeTransactionsRequest,
                 version: int) -> DescribeTransactionsResponse:
    states = []
    for tid in request.transactional_ids:
        if not authz.allowed(ctx, authz.Op.DESCRIBE, authz.TRANSACTIONAL_ID, tid):
            states.append(TransactionState(
                transactional_id=tid, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            continue
        state = describe_one(ctx, tid)
        # Only the partitions of topics the principal may describe are shown.
        visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.topic for t in state.topics))
        state.topics = [t for t in state.topics if t.topic in visible]
        states.append(state)
    return DescribeTransactionsResponse(transaction_states=states)
