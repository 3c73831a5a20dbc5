"""AddOffsetsToTxn (key 25, v0-v4): add the group's `__consumer_offsets` partition to the
transaction, so TxnOffsetCommit may write there and EndTxn will complete it.

Mirrors `KafkaApis.handleAddOffsetsToTxnRequest`: the partition is Kafka's
`partitionFor(groupId)`, then the same coordinator path as AddPartitionsToTxn;
PRODUCER_FENCED is written as INVALID_PRODUCER_EPOCH before v2.
"""

from __future__ import annotations

from groupcoord.apis import txn_support
from groupcoord.apis.context import RequestContext
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC
from groupcoord.wire.generated.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 4


async def handle(ctx: RequestContext, header: RequestHeader, request: AddOffsetsToTxnRequest,
                 version: int) -> AddOffsetsToTxnResponse:
    code = txn_support.coordinator_error(ctx, request.transactional_id, request.group_id)
    if code:
        return AddOffsetsToTxnResponse(error_code=code)
    partition = ctx.groups.partition_for(request.group_id)
    code = await ctx.transactions.add_partitions(
        request.transactional_id, request.producer_id, request.producer_epoch,
        [(OFFSETS_TOPIC, partition)])
    return AddOffsetsToTxnResponse(
        error_code=txn_support.fenced_as_known(code, version, first_fenced_version=2))
