"""AddPartitionsToTxn (key 24, v0-v5): add partitions to the producer's transaction.

Mirrors `KafkaApis.handleAddPartitionsToTxnRequest`: v0-3 carry one transaction (from
clients), v4+ a batch of them (from brokers, KIP-890), each possibly `verify_only` (check
membership without adding: a partition not in the transaction -> TRANSACTION_ABORTABLE).
Per transaction: an unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION, an internal
topic from a client (v0-3) -> TOPIC_AUTHORIZATION_FAILED (Kafka only authorizes
non-internal topics there), and any such failure leaves every other partition of that
transaction OPERATION_NOT_ATTEMPTED; otherwise every partition carries the coordinator's
answer, with PRODUCER_FENCED written as INVALID_PRODUCER_EPOCH before v2.
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis import features, txn_support
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import TRANSACTION_KEY, coordinates
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 5

TopicPartition = tuple[str, int]


def _partition_errors(ctx: RequestContext, topics: list[Any],
                      version: int) -> tuple[dict[TopicPartition, int], bool]:
    """Metadata/authorization errors per partition; True if any partition failed."""
    errors: dict[TopicPartition, int] = {}
    failed = False
    # Clients (v0-3) need WRITE on each topic; internal topics are never writable.
    writable = authz.authorized(ctx, authz.Op.WRITE, authz.TOPIC, (t.name for t in topics)) \
        if version < 4 else None
    for t in topics:
        topic = ctx.topics.get(t.name)
        for p in t.partitions:
            code = 0
            if version < 4 and topic is not None and topic.internal or writable is not None and t.name not in writable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p < topic.num_partitions:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            errors[(t.name, p)] = code
            failed = failed or code != 0
    return errors, failed


def _results(errors: dict[TopicPartition, int]) -> list[AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[AddPartitionsToTxnPartitionResult]] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append(AddPartitionsToTxnPartitionResult(
            partition_index=partition, partition_error_code=code))
    return [AddPartitionsToTxnTopicResult(name=name, results_by_partition=parts)
            for name, parts in by_topic.items()]


async def one_transaction(ctx: RequestContext, tid: str, pid: int, epoch: int,
                          verify_only: bool, topics: list[Any], version: int
                          ) -> list[AddPartitionsToTxnTopicResult]:
    if version < 4 and not authz.allowed(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, tid):
        return _results({(t.name, p): ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                         for t in topics for p in t.partitions})
    if not coordinates(ctx, TRANSACTION_KEY, tid):
        return _results({(t.name, p): ErrorCode.NOT_COORDINATOR
                         for t in topics for p in t.partitions})
    errors, failed = _partition_errors(ctx, topics, version)
    if failed:
        return _results({tp: code or ErrorCode.OPERATION_NOT_ATTEMPTED
                         for tp, code in errors.items()})
    partitions = list(errors)
    if verify_only:
        return _results(ctx.transactions.verify_partitions(tid, pid, epoch, partitions))
    # TransactionVersion.transactionVersionForAddPartitionsToTxn: v4+ is sent for TV2 producers.
    client_tv = features.TRANSACTION_VERSION_2 if version >= 4 else 0
    code = await ctx.transactions.add_partitions(tid, pid, epoch, partitions, client_tv)
    return _results(dict.fromkeys(partitions, txn_support.fenced_as_known(
        code, version, first_fenced_version=2)))


def error_response(request: AddPartitionsToTxnRequest, version: int,
                   code: int) -> AddPartitionsToTxnResponse:
    """Kafka's `AddPartitionsToTxnRequest.getErrorResponse`: v0-3 have no top-level error,
    so every partition of the request carries it."""
    if version >= 4:
        return AddPartitionsToTxnResponse(error_code=code)
    errors = {(t.name, p): code for t in request.v3_and_below_topics for p in t.partitions}
    return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=_results(errors))


async def handle(ctx: RequestContext, header: RequestHeader, request: AddPartitionsToTxnRequest,
                 version: int) -> AddPartitionsToTxnResponse:
    if version >= 4:
        authz.require_cluster(ctx, authz.Op.CLUSTER_ACTION)  # brokers only
    if version < 4:
        results = await one_transaction(
            ctx, request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch, False, request.v3_and_below_topics, version)
        return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=results)
    by_txn = [AddPartitionsToTxnResult(
        transactional_id=t.transactional_id,
        topic_results=await one_transaction(ctx, t.transactional_id, t.producer_id,
                                            t.producer_epoch, t.verify_only, t.topics,
                                            version))
        for t in request.transactions]
    return AddPartitionsToTxnResponse(error_code=0, results_by_transaction=by_txn)
