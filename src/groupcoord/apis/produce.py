"""Produce (key 0, v3-v12): append client record batches to partition logs.

Mirrors `KafkaApis.handleProduceRequest` -> `ReplicaManager.appendRecords` ->
`UnifiedLog.appendAsLeader` for a single replica: exactly one magic-2 batch per partition
(else INVALID_RECORD, `ProduceRequest.validateRecords`); CRC and length errors ->
CORRUPT_MESSAGE; too large -> MESSAGE_TOO_LARGE; zstd before v7 ->
UNSUPPORTED_COMPRESSION_TYPE; internal topics -> INVALID_TOPIC_EXCEPTION;
unknown partitions -> UNKNOWN_TOPIC_OR_PARTITION. Idempotent batches go through the
producer state (`ProducerStateManager`): a retried batch is answered with its original
offsets without appending, stale epochs get INVALID_PRODUCER_EPOCH and gaps
OUT_OF_ORDER_SEQUENCE_NUMBER. Transactional batches need the request's transactional id
(else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for the whole request) and, unless the producer
already has an open transaction on the partition at that epoch, the transaction
coordinator's word that the partition was added (KIP-890 verification, as
`ReplicaManager.appendRecordsWithTransactionVerification` with its error translation:
fenced -> INVALID_PRODUCER_EPOCH, not added -> TRANSACTION_ABORTABLE from v11 and
INVALID_TXN_STATE before, coordinator busy -> NOT_ENOUGH_REPLICAS). From v12 the producer
runs KIP-890 part 2 transactions (`transaction.version` 2) and never sends
AddPartitionsToTxn: the partition is added to its transaction instead of only verified
(`AddPartitionsToTxnManager`'s `addPartition` operation); a non-transactional
batch while the producer's transaction is open -> INVALID_TXN_STATE. A disk that refuses the
write answers KAFKA_STORAGE_ERROR for that partition (retriable; the log kept nothing of it). With acks=0 no
response is sent at all (a failed acks=0 produce closes the connection instead, as Kafka
does). The stored bytes are the client's bytes; storage rewrites the base offset (and
LogAppendTime if the topic says so). acks=-1 equals acks=1 here: this node is the whole ISR.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import leads
from groupcoord.logformat.batch import (
    ATTRIBUTES_OFFSET,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    TRANSACTIONAL_MASK,
    parse_header,
)
from groupcoord.storage.config import (
    InvalidRecordError,
    KafkaStorageError,
    NotPartitionLeader,
    RecordBatchTooLargeError,
)
from groupcoord.wire import error_code_numbers as codes
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.produce import (
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from groupcoord.wire.headers import RequestHeader

log = logging.getLogger("groupcoord.server")

MIN_VERSION, MAX_VERSION = 3, 12
# First version whose transactional batches add their partition to the transaction
# (`produceRequestVersionToTransactionSupportedOperation`: addPartition).
FIRST_ADD_PARTITION_VERSION = 12

_LENGTH = struct.Struct(">i")
ZSTD = 4
# Verification answers translated for the producer (ReplicaManager, KIP-890).
_VERIFY_RETRIABLE = frozenset({int(ErrorCode.CONCURRENT_TRANSACTIONS),
                               int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
                               int(ErrorCode.COORDINATOR_NOT_AVAILABLE),
                               int(ErrorCode.NOT_COORDINATOR)})


def _is_transactional(records: Any) -> bool:
    return (records is not None and len(records) >= HEADER_SIZE
            and bool(records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_MASK))


def _one_batch_error(records: Any) -> int:
    """Kafka's ProduceRequest.validateRecords for v3+: one whole magic-2 batch."""
    size = len(records) if records is not None else 0
    if size < HEADER_SIZE:
        return codes.CORRUPT_MESSAGE if size else codes.INVALID_RECORD
    (length,) = _LENGTH.unpack_from(records, 8)
    if length + LOG_OVERHEAD != size:
        return codes.INVALID_RECORD if length + LOG_OVERHEAD < size else codes.CORRUPT_MESSAGE
    if records[MAGIC_OFFSET] != MAGIC:
        return codes.INVALID_RECORD
    return codes.NONE


async def _verify_error(ctx: RequestContext, state: Any, header: Any, topic: str,
                        partition: int, tid: str | None, version: int) -> int:
    """KIP-890: a transactional batch that may start a transaction on this partition is
    checked against (part 1), or from v12 added by (part 2), the transaction coordinator
    before it is written. The producer-state checks follow the answer: a marker written
    while the partition was being added bumped the producer's epoch, so the batch is fenced."""
    if state.has_ongoing(header.producer_id, header.producer_epoch):
        return 0
    code = int(await ctx.transactions.verify_at_coordinator(
        tid or "", header.producer_id, header.producer_epoch, (topic, partition),
        add=version >= FIRST_ADD_PARTITION_VERSION))
    if code == ErrorCode.PRODUCER_FENCED:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    if code == ErrorCode.TRANSACTION_ABORTABLE and version <= 10:
        return int(ErrorCode.INVALID_TXN_STATE)
    if code in _VERIFY_RETRIABLE:
        return int(ErrorCode.NOT_ENOUGH_REPLICAS)
    return code


def _duplicate_or_error(ctx: RequestContext, state: Any, header: Any, topic: str,
                        resp: PartitionProduceResponse) -> bool:
    """Kafka's producer-state checks; True when `resp` is final (an error or a duplicate)."""
    error, duplicate = state.check(header.producer_id, header.producer_epoch,
                                   header.base_sequence, header.last_sequence)
    if not error and duplicate is None:
        error = state.check_transactional(header.producer_id, header.is_transactional)
    if error:
        resp.error_code = error
        return True
    if duplicate is None:
        return False
    plog = ctx.topics.log(topic, resp.index)
    resp.base_offset = duplicate.first_offset
    resp.log_start_offset = plog.log_start_offset if plog is not None else -1
    return True


async def produce_partition(ctx: RequestContext, topic: Any, partition: int, records: Any,
                            now_ms: int, version: int,
                            tid: str | None = None) -> PartitionProduceResponse:
    """Validate and append one partition's batch; the partition's response."""
    resp = PartitionProduceResponse(index=partition, error_code=0, base_offset=-1,
                                    log_append_time_ms=-1, log_start_offset=-1)
    if topic is None or not 0 <= partition < topic.num_partitions:
        resp.error_code = codes.UNKNOWN_TOPIC_OR_PARTITION
        return resp
    if topic.internal:
        resp.error_code = codes.INVALID_TOPIC_EXCEPTION
        return resp
    if not leads(ctx, topic.name, partition):
        resp.error_code = codes.NOT_LEADER_OR_FOLLOWER
        return resp
    error = _one_batch_error(records)
    if error:
        resp.error_code = error
        return resp
    header = parse_header(records, 0)
    if header.compression == ZSTD and version < 7:
        resp.error_code = codes.UNSUPPORTED_COMPRESSION_TYPE
        return resp
    tracked = header.producer_id >= 0 and (header.base_sequence >= 0
                                           or header.is_transactional)
    if tracked and header.is_transactional:
        resp.error_code = await _verify_error(ctx, ctx.producer_state(topic.name, partition),
                                              header, topic.name, partition, tid, version)
        if resp.error_code:
            return resp
    # The producer-state checks see every earlier append's outcome, and the state records
    # this one's before the next append is checked: one append of the partition at a time.
    async with ctx.append_lock(topic.name, partition):
        return await _append_checked(ctx, topic.name, partition, records, header, now_ms,
                                     tracked, resp)


async def _append_checked(ctx: RequestContext, topic: str, partition: int, records: Any,
                          header: Any, now_ms: int, tracked: bool,
                          resp: PartitionProduceResponse) -> PartitionProduceResponse:
    """The producer-state checks (idempotent and transactional batches), the append and
    its record in the producer state, under the partition's append lock."""
    state = None
    if tracked:
        state = ctx.producer_state(topic, partition)
        if _duplicate_or_error(ctx, state, header, topic, resp):
            return resp
    try:
        info = await ctx.append(topic, partition, records, now_ms)
    except RecordBatchTooLargeError:
        resp.error_code = codes.MESSAGE_TOO_LARGE
        return resp
    except InvalidRecordError:
        resp.error_code = codes.CORRUPT_MESSAGE
        return resp
    except NotPartitionLeader:
        # Another node leads the partition (its log shared in PostgreSQL): nothing written;
        # the producer refreshes its metadata and retries.
        resp.error_code = codes.NOT_LEADER_OR_FOLLOWER
        return resp
    except KafkaStorageError as exc:
        # Nothing of the batch stayed in the log, or (a lost PostgreSQL connection) the
        # broker finds out whether it did before the retry; the producer retries.
        log.warning("produce to %s-%d: %s", topic, partition, exc)
        resp.error_code = codes.KAFKA_STORAGE_ERROR
        return resp
    if state is not None and header.base_sequence >= 0:
        state.record(header.producer_id, header.producer_epoch, header.base_sequence,
                     header.last_sequence, info.base_offset, info.last_offset, info.max_timestamp)
    resp.base_offset = info.base_offset
    resp.log_append_time_ms = info.log_append_time_ms
    resp.log_start_offset = info.log_start_offset
    return resp


def error_response(request: ProduceRequest, version: int, code: int
                   ) -> ProduceResponse | None:
    """Kafka's `ProduceRequest.getErrorResponse`: the error on every partition, and no
    response at all for acks=0."""
    if request.acks == 0:
        return None
    return ProduceResponse(responses=[
        TopicProduceResponse(name=t.name, topic_id=t.topic_id, partition_responses=[
            _refused(p.index, code) for p in t.partition_data])
        for t in request.topic_data])


def _refused(index: int, code: int) -> PartitionProduceResponse:
    """Kafka's `PartitionResponse(error)`: no offset, append time or log start."""
    return PartitionProduceResponse(index=index, error_code=code, base_offset=-1,
                                    log_append_time_ms=-1, log_start_offset=-1)


def _authorize(ctx: RequestContext, request: ProduceRequest, version: int
               ) -> tuple[set[str] | None, bool]:
    """(topics the principal may write, None without an authorizer; whether transactional
    records meet a transactional id it may not write, which fails the whole request)."""
    if not authz.enabled(ctx):
        return None, False
    tid = request.transactional_id
    txn_denied = tid is not None and any(
        _is_transactional(pd.records) for td in request.topic_data for pd in td.partition_data
    ) and not authz.allowed(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, tid)
    if version < 13:
        names = [td.name for td in request.topic_data]
    else:
        infos = (ctx.topics.by_id(td.topic_id) for td in request.topic_data)
        names = [info.name for info in infos if info is not None]
    return authz.authorized(ctx, authz.Op.WRITE, authz.TOPIC, names), txn_denied


async def handle(ctx: RequestContext, header: RequestHeader, request: ProduceRequest,
                 version: int) -> ProduceResponse | None:
    now = ctx.now_ms()
    acks = request.acks
    topics = ctx.topics
    tid = request.transactional_id
    writable, txn_denied = _authorize(ctx, request, version)
    responses = []
    for td in request.topic_data:
        topic = topics.get(td.name) if version < 13 else topics.by_id(td.topic_id)
        name = td.name if version < 13 else (topic.name if topic is not None else None)
        parts = []
        for pd in td.partition_data:
            if acks not in (0, 1, -1):
                parts.append(_refused(pd.index, codes.INVALID_REQUIRED_ACKS))
                continue
            if txn_denied:
                parts.append(_refused(pd.index, codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
                continue
            if writable is not None and name is not None and name not in writable:
                parts.append(_refused(pd.index, codes.TOPIC_AUTHORIZATION_FAILED))
                continue
            if tid is None and _is_transactional(pd.records):
                # Kafka refuses the whole request (handleProduceRequest).
                parts.append(_refused(pd.index, codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
                continue
            resp = await produce_partition(ctx, topic, pd.index, pd.records, now, version,
                                           tid)
            if topic is None and version >= 13:
                resp.error_code = codes.UNKNOWN_TOPIC_ID
            parts.append(resp)
        responses.append(TopicProduceResponse(name=td.name, topic_id=td.topic_id,
                                              partition_responses=parts))
    if acks == 0:
        # Kafka closes the connection when an acks=0 produce failed, the only way the
        # client can notice.
        if any(p.error_code for t in responses for p in t.partition_responses):
            ctx.close_connection()
        return None
    return ProduceResponse(responses=responses)
