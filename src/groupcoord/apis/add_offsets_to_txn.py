"""AddOffsetsToTxn (key 25, v0-v4): add the group's `__consumer_offsets` partition to the
transaction, so TxnOffsetCommit may write there and EndTxn will complete it.

Mirrors `KafkaApis.handleAddOffsetsToTxnRequest`: the partition is Kafka's
`partitionFor(groupId)`, then the same coordinator path as AddPartitionsToTxn;
PRODUCER_FENCED is written as INVALID_PRODUCER_EPOCH before v2.
"""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import TRANSACTION_KEY, coordinates
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC
from groupcoord.wire.api_keys import ApiKey
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from groupcoord.wire.headers import RequestHeader

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN
MIN_VERSION = 0
MAX_VERSION = 4


async def handle(ctx: RequestContext, header: RequestHeader, request: AddOffsetsToTxnRequest,
                 version: int) -> AddOffsetsToTxnResponse:
    if not authz.allowed(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authz.allowed(ctx, authz.Op.READ, authz.GROUP, request.group_id):
        return AddOffsetsToTxnResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not coordinates(ctx, TRANSACTION_KEY, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=ErrorCode.NOT_COORDINATOR)
    partition = ctx.groups.partition_for(request.group_id)
    code = ctx.transactions.add_partitions(request.transactional_id, request.producer_id,
                                           request.producer_epoch, [(OFFSETS_TOPIC, partition)])
    if code == ErrorCode.PRODUCER_FENCED and version < 2:
        code = ErrorCode.INVALID_PRODUCER_EPOCH
    return AddOffsetsToTxnResponse(error_code=code)
