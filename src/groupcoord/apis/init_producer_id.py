"""InitProducerId (key 22, v0-v5): producer ids for idempotent (and transactional) producers.

Mirrors `KafkaApis.handleInitProducerIdRequest` + `ProducerIdManager`: without a
transactional id every call gets a fresh producer id with epoch 0 (ids are reserved in
persisted blocks, so they never repeat after a restart). A transactional id keeps its id
and bumps the epoch; transactions themselves (AddPartitionsToTxn, EndTxn) are not served,
so transactional producers cannot commit. Timeouts above `transaction.max.timeout.ms`
(15 minutes) -> INVALID_TRANSACTION_TIMEOUT.
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis.context import RequestContext
from groupcoord.wire.api_keys import ApiKey
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)

API_KEY = ApiKey.INIT_PRODUCER_ID
MIN_VERSION = 0
MAX_VERSION = 5
TRANSACTION_MAX_TIMEOUT_MS = 900_000


async def handle(ctx: RequestContext, header: Any, request: InitProducerIdRequest,
                 version: int) -> InitProducerIdResponse:
    tid = request.transactional_id
    if tid is not None:
        if tid == "":
            tid = None
        elif not 0 < request.transaction_timeout_ms <= TRANSACTION_MAX_TIMEOUT_MS:
            return InitProducerIdResponse(error_code=ErrorCode.INVALID_TRANSACTION_TIMEOUT,
                                          producer_id=-1, producer_epoch=-1)
    pid, epoch = ctx.producers.init_producer_id(tid)
    return InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=epoch)
