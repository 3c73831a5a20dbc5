"""InitProducerId (key 22, v0-v5): producer ids for idempotent and transactional producers.

Mirrors `KafkaApis.handleInitProducerIdRequest` + `TransactionCoordinator.handleInitProducerId`:
without a transactional id every call gets a fresh producer id with epoch 0 (ids are
reserved in persisted blocks, so they never repeat after a restart). With one, the
transaction coordinator bumps the epoch (or rotates the id when epochs are exhausted),
aborting an ongoing transaction first and answering CONCURRENT_TRANSACTIONS meanwhile.
An empty transactional id -> INVALID_REQUEST; timeouts outside (0, 15 min] ->
INVALID_TRANSACTION_TIMEOUT; v3+ (ProducerId, ProducerEpoch) must be both -1 or both set
(else INVALID_REQUEST); PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4.
"""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis import txn_support
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import TRANSACTION_KEY, coordinates
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 5


def _error(code: int) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)


async def handle(ctx: RequestContext, header: RequestHeader, request: InitProducerIdRequest,
                 version: int) -> InitProducerIdResponse:
    tid = request.transactional_id
    if tid is not None and not authz.allowed(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, tid):
        return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if tid is None and not authz.may_write_idempotently(ctx):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if tid is None:
        pid, epoch = ctx.producers.init_producer_id()
        return InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=epoch)
    if not coordinates(ctx, TRANSACTION_KEY, tid):
        return _error(ErrorCode.NOT_COORDINATOR)
    expected: tuple[int, int] | None = None
    if version >= 3:
        pid, epoch = request.producer_id, request.producer_epoch
        if (pid == -1) != (epoch == -1):
            return _error(ErrorCode.INVALID_REQUEST)
        if pid != -1:
            expected = (pid, epoch)
    op = await ctx.transactions.init_producer_id(tid, request.transaction_timeout_ms, expected)
    if op.error:
        return _error(txn_support.fenced_as_known(op.error, version, first_fenced_version=4))
    return InitProducerIdResponse(error_code=0, producer_id=op.producer_id,
                                  producer_epoch=op.producer_epoch)
