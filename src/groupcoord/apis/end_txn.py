"""EndTxn (key 26, v0-v5): commit or abort the producer's transaction.

Mirrors `KafkaApis.handleEndTxnRequest` + `TransactionCoordinator.handleEndTransaction`:
Ongoing -> PrepareCommit/PrepareAbort (written), COMMIT/ABORT markers to every partition of
the transaction (data partitions and `__consumer_offsets` through the group coordinator),
then CompleteCommit/CompleteAbort. A retry after completion answers NONE, one while markers
are written CONCURRENT_TRANSACTIONS, the opposite outcome INVALID_TXN_STATE. v5 is the
KIP-890 part 2 client (transaction version 2): the epoch is bumped by every EndTxn and
the response carries the producer id and new epoch. PRODUCER_FENCED is written as
INVALID_PRODUCER_EPOCH before v2.
"""

from __future__ import annotations

from groupcoord.apis import features, txn_support
from groupcoord.apis.context import RequestContext
from groupcoord.wire.generated.end_txn import EndTxnRequest, EndTxnResponse
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 5


async def handle(ctx: RequestContext, header: RequestHeader, request: EndTxnRequest,
                 version: int) -> EndTxnResponse:
    code = txn_support.coordinator_error(ctx, request.transactional_id)
    if code:
        return EndTxnResponse(error_code=code, producer_id=-1, producer_epoch=-1)
    # TransactionVersion.transactionVersionForEndTxn.
    client_tv = features.TRANSACTION_VERSION_2 if version > 4 else 0
    op = await ctx.transactions.end_txn(request.transactional_id, request.producer_id,
                                        request.producer_epoch, request.committed, client_tv)
    code = txn_support.fenced_as_known(op.error, version, first_fenced_version=2)
    if code:
        return EndTxnResponse(error_code=code, producer_id=-1, producer_epoch=-1)
    return EndTxnResponse(error_code=0, producer_id=op.producer_id,
                          producer_epoch=op.producer_epoch)
