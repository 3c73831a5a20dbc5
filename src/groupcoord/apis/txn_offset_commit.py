"""TxnOffsetCommit (API 28, v0-6): the consumer offsets of a transaction (KIP-98, KIP-447).

As `KafkaApis.handleTxnOffsetCommitRequest` + `GroupCoordinatorService.
commitTransactionalOffsets`: an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION for all
its partitions and an unknown partition for itself; from v6 topics are named by id
(KIP-1319) and an id this broker does not know answers UNKNOWN_TOPIC_ID for all its
partitions; the coordinator then sees the topic's name, as Kafka resolves it from the
metadata cache. An empty group id is INVALID_GROUP_ID;
the valid partitions go to the group's shard, whose records are written in a
transactional batch of the request's producer id and epoch and stay pending until the
transaction's marker. An error for the whole request (e.g. COORDINATOR_NOT_AVAILABLE,
INVALID_PRODUCER_EPOCH) is reported on every partition, as `getErrorResponse` does; v0-1
see COORDINATOR_LOAD_IN_PROGRESS as COORDINATOR_NOT_AVAILABLE (KAFKA-7296).

Transaction verification (KIP-890 part 1, `CoordinatorRuntime.scheduleTransactionalWriteOperation`
-> `CoordinatorPartitionWriter.maybeStartTransactionVerification` -> `ReplicaManager.
maybeSendPartitionToTransactionCoordinator`): unless the producer (id and epoch) already has
an open transaction on the group's `__consumer_offsets` partition, the transaction
coordinator must confirm that AddOffsetsToTxn added that partition before anything is
written. Its answer is translated as `AddPartitionsToTxnManager` does (PRODUCER_FENCED ->
INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE -> INVALID_TXN_STATE before v4, the
`defaultError` operation) and then as `GroupCoordinatorService.handleOperationException`
does (NOT_ENOUGH_REPLICAS -> COORDINATOR_NOT_AVAILABLE, ...). v5 is Kafka's `addPartition`
operation (transaction version 2): the partition is added instead of only verified.
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError, operation_error
from groupcoord.apis.group_support import partition_exists, topic_info
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 6
# First version whose client handles TRANSACTION_ABORTABLE (`genericErrorSupported`).
FIRST_ABORTABLE_VERSION = 4
# First version whose verification adds the partition (`addPartition`, KIP-890 part 2).
FIRST_ADD_PARTITION_VERSION = 5
# First version naming topics by id (`TxnOffsetCommitResponse.useTopicIds`, KIP-1319).
FIRST_TOPIC_ID_VERSION = 6


def error_response(request: Any, version: int, code: int) -> TxnOffsetCommitResponse:
    code = _for_version(code, version)
    return TxnOffsetCommitResponse(topics=[
        TxnOffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions])
        for t in request.topics])


def _for_version(code: int, version: int) -> int:
    # Producers before 2.0 crash on COORDINATOR_LOAD_IN_PROGRESS (KAFKA-7296).
    if version < 2 and code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        return int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return int(code)


def verification_error(code: int, version: int) -> int:
    """`AddPartitionsToTxnManager`'s translation of the transaction coordinator's answer
    for the operation this request version supports."""
    if code == ErrorCode.PRODUCER_FENCED:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    if code == ErrorCode.TRANSACTION_ABORTABLE and version < FIRST_ABORTABLE_VERSION:
        return int(ErrorCode.INVALID_TXN_STATE)
    return int(code)


async def _verify(ctx: RequestContext, request: Any, version: int) -> int:
    """KIP-890 part 1: 0 when the group's `__consumer_offsets` partition may take the
    producer's transactional records, else the (translated) verification error."""
    partition = ctx.groups.partition_for(request.group_id)
    pid, epoch = request.producer_id, request.producer_epoch
    if ctx.producer_state(OFFSETS_TOPIC, partition).has_ongoing(pid, epoch):
        return 0
    tp = (OFFSETS_TOPIC, partition)
    tid = request.transactional_id or ""
    code = await ctx.transactions.verify_at_coordinator(
        tid, pid, epoch, tp, add=version >= FIRST_ADD_PARTITION_VERSION)
    return verification_error(code, version)


def _commit_op(request: Any, version: int) -> Any:
    def run(shard: Any, op_ctx: Any, now_ms: int) -> Any:
        return shard.txn_offset_commit(request, version, op_ctx, now_ms)
    return run


def _split(ctx: RequestContext, request: Any, version: int) -> tuple[dict[tuple[int, int], int],
                                                          list[Any], list[str]]:
    """Errors of unknown topics, topics the principal may not read and unknown partitions,
    the topics left to commit (by name and id), and each request topic's name (resolved
    from its id from v6)."""
    errors: dict[tuple[int, int], int] = {}
    valid_topics = []
    names = []
    by_id = version >= FIRST_TOPIC_ID_VERSION
    infos = [topic_info(ctx, topic_id=t.topic_id) if by_id else topic_info(ctx, name=t.name)
             for t in request.topics]
    readable = authz.authorized(ctx, authz.Op.READ, authz.TOPIC,
                                (info.name if info is not None else t.name
                                 for t, info in zip(request.topics, infos)))
    for ti, (topic, info) in enumerate(zip(request.topics, infos)):
        names.append(info.name if info is not None else topic.name)
        if by_id and info is None:
            for p in topic.partitions:
                errors[(ti, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_ID
            continue
        valid = []
        for p in topic.partitions:
            if names[ti] not in readable:
                errors[(ti, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not partition_exists(info, p.partition_index):
                errors[(ti, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                valid.append(p)
        if valid:
            valid_topics.append(TxnOffsetCommitRequestTopic(
                name=info.name, topic_id=info.topic_id, partitions=valid))
    return errors, valid_topics, names


async def _commit(ctx: RequestContext, sub: Any, version: int) -> Any:
    """The coordinator's answer for the valid partitions; a whole-request error lands on
    each of them only (unknown partitions keep their own error, as Kafka merges them)."""
    if not sub.group_id:
        return error_response(sub, version, ErrorCode.INVALID_GROUP_ID)
    error = await _verify(ctx, sub, version)
    if error:
        return error_response(sub, version, operation_error(error))
    try:
        return await ctx.groups.call_transactional(
            sub.group_id, sub.producer_id, sub.producer_epoch, _commit_op(sub, version))
    except ApiError as exc:
        return error_response(sub, version, operation_error(exc.code))


async def handle(ctx: RequestContext, header: RequestHeader, request: TxnOffsetCommitRequest,
                 version: int) -> TxnOffsetCommitResponse:
    authz.require_transactional_id(ctx, authz.Op.WRITE, request.transactional_id)
    authz.require_group(ctx, authz.Op.READ, request.group_id)
    errors, valid_topics, names = _split(ctx, request, version)
    answered: dict[tuple[str, int], int] = {}
    if valid_topics:
        sub = TxnOffsetCommitRequest(
            transactional_id=request.transactional_id, group_id=request.group_id,
            producer_id=request.producer_id, producer_epoch=request.producer_epoch,
            generation_id_or_member_epoch=request.generation_id_or_member_epoch,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id, topics=valid_topics)
        response = await _commit(ctx, sub, version)
        answered = {(t.name, p.partition_index): p.error_code
                    for t in response.topics for p in t.partitions}
    topics = []
    for ti, topic in enumerate(request.topics):
        name = names[ti]
        topics.append(TxnOffsetCommitResponseTopic(name=name, topic_id=topic.topic_id, partitions=[
            TxnOffsetCommitResponsePartition(
                partition_index=p.partition_index,
                error_code=_for_version(errors.get((ti, p.partition_index), answered.get(
                    (name, p.partition_index), 0)), version))
            for p in topic.partitions]))
    return TxnOffsetCommitResponse(topics=topics)
