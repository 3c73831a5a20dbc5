"""ListTransactions (key 66, v0-v2): the transactional ids this coordinator knows.

Mirrors `KafkaApis.handleListTransactionsRequest` + `TransactionStateManager
.listTransactionStates`: filters by state names (unknown names are echoed in
`unknown_state_filters`), producer ids, v1 duration (only transactions running longer than
it; Kafka compares with the start time, so idle ids with start -1 pass) and v2 a
transactional id regular expression (full match; an invalid one ->
INVALID_REGULAR_EXPRESSION). Dead ids are never listed.
"""

from __future__ import annotations

import re

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
    TransactionState,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 2


async def handle(ctx: RequestContext, header: RequestHeader, request: ListTransactionsRequest,
                 version: int) -> ListTransactionsResponse:
    pattern = request.transactional_id_pattern if version >= 2 else None
    duration = request.duration_filter if version >= 1 else -1
    try:
        found, unknown = ctx.transactions.list_transactions(
            request.state_filters, request.producer_id_filters, duration, pattern or None,
            ctx.now_ms())
    except re.error:
        return ListTransactionsResponse(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION)
    except ApiError as exc:  # a __transaction_state shard is still loading
        return ListTransactionsResponse(error_code=exc.code)
    states = [TransactionState(transactional_id=md.transactional_id,
                               producer_id=md.producer_id,
                               transaction_state=md.state.kafka_name)
              for md in sorted(found, key=lambda m: m.transactional_id)
              if authz.allowed(ctx, authz.Op.DESCRIBE, authz.TRANSACTIONAL_ID, md.transactional_id)]
    return ListTransactionsResponse(error_code=0, unknown_state_filters=unknown,
                                    transaction_states=states)
