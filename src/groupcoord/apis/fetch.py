"""Fetch (key 1, v4-v17): read stored batches, long-polling until min_bytes or max_wait.

Mirrors `KafkaApis.handleFetchRequest` + `ReplicaManager.fetchMessages` / `readFromLog` +
`DelayedFetch` for a single replica. Rules kept:
- sessions (KIP-227, v7+) through `ctx.fetch_sessions` (`FetchManager.newContext`):
  session errors answer with a top-level error and no partitions; incremental responses
  carry only partitions that changed;
- the high watermark is the log end offset (one replica); read_committed (isolation level
  1) reads only batches below the last stable offset (the first offset of the oldest open
  transaction) and gets the aborted transactions overlapping the returned range, from the
  `.txnindex` files (`UnifiedLog.read` + `collectAbortedTransactions`, upper bound = the
  offset after the last returned batch); every response carries the LSO;
- OFFSET_OUT_OF_RANGE outside [log_start_offset, high watermark]; CORRUPT_MESSAGE with
  high watermark, log start and last stable offset -1 for an offset that damaged stored
  bytes may hold (the reads before it return the intact batches up to the damage);
- limits: each partition reads at most its partition_max_bytes and what is left of the
  response max_bytes, except that the first partition with data returns at least one whole
  batch (`minOneMessage`);
- the response wakes on any append to a fetched partition (`ctx.wait_for_data`) and
  returns when the bytes read reach min_bytes, an error occurs, or max_wait_ms passes; a
  fetch with no partition to read (the request's, or an incremental session's) is answered
  at once;
- records are the stored bytes, handed to the transport without re-encoding
  (`fetch_encode`, byte-identical to the generated encoder).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.fetch_encode import encode_fetch_response
from groupcoord.apis.raw_response import RawResponse
from groupcoord.apis.services import FetchPartition
from groupcoord.logformat.batch import iter_batches
from groupcoord.storage.config import CorruptBatchError, OffsetOutOfRangeError
from groupcoord.storage.transactions import collect_aborted_txns
from groupcoord.wire import error_code_numbers as codes
from groupcoord.wire.generated.fetch import (
    AbortedTransaction,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    PartitionData,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 4, 17

READ_COMMITTED = 1
EMPTY = b""


class PartitionRead:
    """What one partition read returned."""

    __slots__ = ("aborted", "cp", "data", "error", "hw", "log_start", "lso", "name",
                 "topic_id")

    def __init__(self, cp: Any, name: str | None, topic_id: bytes, error: int, hw: int,
                 log_start: int, data: Any, lso: int = -1,
                 aborted: list[Any] | None = None) -> None:
        self.cp, self.name, self.topic_id = cp, name, topic_id
        self.error, self.hw, self.log_start, self.data = error, hw, log_start, data
        self.lso = hw if lso < 0 else lso
        self.aborted = aborted


def _last_stable_offset(ctx: RequestContext, name: str, index: int, hw: int,
                        read_committed: bool) -> int:
    """read_committed loads the partition's producer state if needed; read_uncommitted
    only reports what is already known (no log scan on the plain consumer path)."""
    if read_committed:
        return int(ctx.producer_state(name, index).last_stable_offset(hw))
    state = ctx.producers.partition(name, index)
    return hw if state is None else int(state.last_stable_offset(hw))


def _aborted(plog: Any, fetch_offset: int, data: Any, lso: int) -> list[AbortedTransaction]:
    """The aborted transactions overlapping the returned batches. Most logs have none:
    the index is asked first for the whole stable range, and the exact upper bound (the
    offset after the last returned batch) is only computed when something was found."""
    found = collect_aborted_txns(plog, fetch_offset, lso)
    if not found:
        return []
    upper = fetch_offset
    for header, _view in iter_batches(data):
        upper = header.next_offset
    return [AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
            for t in found if t.first_offset < upper]


def _resolve(ctx: RequestContext, key: Any, uses_ids: bool) -> Any:
    return ctx.topics.by_id(key) if uses_ids else ctx.topics.get(key)


def _read_one(ctx: RequestContext, cp: Any, topic: Any, plog: Any, want: int, min_one: bool,
              read_committed: bool) -> PartitionRead:
    """Read one partition: up to the LSO for read_committed, else the high watermark."""
    index = cp.key[1]
    hw = plog.log_end_offset
    start = plog.log_start_offset
    lso = _last_stable_offset(ctx, topic.name, index, hw, read_committed)
    upper = lso if read_committed else hw
    data: Any = EMPTY
    error = 0
    if cp.fetch_offset < upper and (min_one or want > 0):
        try:
            data = plog.read(cp.fetch_offset, want, upper)
        except OffsetOutOfRangeError:
            error = codes.OFFSET_OUT_OF_RANGE
        except CorruptBatchError:
            # Kafka's answer to a read error (`readFromLog`): no offsets, no data.
            return PartitionRead(cp, topic.name, topic.topic_id, codes.CORRUPT_MESSAGE, -1, -1,
                                 EMPTY)
        if not min_one and len(data) > want:
            data = EMPTY
    elif cp.fetch_offset > hw or cp.fetch_offset < start:
        error = codes.OFFSET_OUT_OF_RANGE
    aborted = None
    if read_committed:
        aborted = _aborted(plog, cp.fetch_offset, data, lso) if len(data) else []
    return PartitionRead(cp, topic.name, topic.topic_id, error, hw, start, data, lso, aborted)


def read_partitions(ctx: RequestContext, partitions: Sequence[FetchPartition], max_bytes: int,
                    uses_ids: bool, read_committed: bool = False,
                    denied: frozenset[Any] = frozenset()) -> tuple[list[PartitionRead], int]:
    """One pass over the partitions (`readFromLog`); returns the reads and total bytes.
    Topics (names, or ids from v13) in `denied` answer TOPIC_AUTHORIZATION_FAILED."""
    reads: list[PartitionRead] = []
    limit = max_bytes
    min_one = True
    total = 0
    cluster, node = ctx.cluster, ctx.node_id
    for cp in partitions:
        topic_key, index = cp.key
        # A name before v13, a topic id from then on (`uses_ids`).
        key_name = topic_key if isinstance(topic_key, str) else None
        key_id = topic_key if isinstance(topic_key, bytes) else bytes(16)
        topic = _resolve(ctx, topic_key, uses_ids)
        if topic_key in denied and (topic is not None or not uses_ids):
            reads.append(PartitionRead(cp, topic.name if topic is not None else key_name,
                                       key_id, codes.TOPIC_AUTHORIZATION_FAILED, -1, -1, EMPTY,
                                       aborted=[]))
            continue
        plog = None if topic is None else ctx.topics.log(topic.name, index)
        if plog is None:
            error = (codes.UNKNOWN_TOPIC_ID if uses_ids and topic is None
                     else codes.UNKNOWN_TOPIC_OR_PARTITION)
            reads.append(PartitionRead(cp, key_name, key_id, error, -1, -1, EMPTY,
                                       aborted=[]))
            continue
        if cluster is not None and cluster.owner(topic.name, index) != node:
            reads.append(PartitionRead(cp, topic.name, topic.topic_id,
                                       codes.NOT_LEADER_OR_FOLLOWER, -1, -1, EMPTY, aborted=[]))
            continue
        read = _read_one(ctx, cp, topic, plog, min(cp.max_bytes, limit), min_one,
                         read_committed)
        size = len(read.data)
        if size:
            min_one = False
            limit = max(0, limit - size)
            total += size
        reads.append(read)
    return reads, total


def _partition_data(read: PartitionRead, read_committed: bool) -> PartitionData:
    # Refused partitions carry Kafka's `partitionResponse` default, an empty list; reads
    # carry the aborted transactions under read_committed and null otherwise.
    aborted = read.aborted
    if read_committed and aborted is None:
        aborted = []
    return PartitionData(
        partition_index=read.cp.key[1], error_code=read.error, high_watermark=read.hw,
        last_stable_offset=read.lso, log_start_offset=read.log_start,
        aborted_transactions=aborted, preferred_read_replica=-1, records=read.data)


def build_response(reads: list[PartitionRead], keep: list[int], session_id: int,
                   read_committed: bool) -> FetchResponse:
    topics: list[FetchableTopicResponse] = []
    last_key: Any = None
    for i in keep:
        read = reads[i]
        key = read.cp.key[0]
        if key != last_key or not topics:
            topics.append(FetchableTopicResponse(topic=read.name or "", topic_id=read.topic_id,
                                                 partitions=[]))
            last_key = key
        topics[-1].partitions.append(_partition_data(read, read_committed))
    return FetchResponse(error_code=0, session_id=session_id, responses=topics)


def _requested(request: FetchRequest, uses_ids: bool) -> tuple[list[Any], list[Any]]:
    requested = [
        ((t.topic_id if uses_ids else t.topic, p.partition), p.fetch_offset, p.partition_max_bytes)
        for t in request.topics for p in t.partitions
    ]
    forgotten = [
        (t.topic_id if uses_ids else t.topic, p)
        for t in request.forgotten_topics_data for p in t.partitions
    ]
    return requested, forgotten


def _unreadable(ctx: RequestContext, request: FetchRequest, version: int,
                partitions: Sequence[FetchPartition], uses_ids: bool) -> frozenset[Any]:
    """Topic keys the fetch may not read: without READ on the topic (a consumer), or every
    one without CLUSTER_ACTION on the cluster (a follower), as `handleFetchRequest`."""
    if not authz.enabled(ctx):
        return frozenset()
    keys = {cp.key[0] for cp in partitions}
    replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
    if replica_id >= 0:
        return frozenset() if authz.allowed_on_cluster(ctx, authz.Op.CLUSTER_ACTION) \
            else frozenset(keys)
    if uses_ids:
        infos = {k: _resolve(ctx, k, True) for k in keys}
        names = {k: info.name for k, info in infos.items() if info is not None}
    else:
        names = {k: k for k in keys}
    readable = authz.authorized(ctx, authz.Op.READ, authz.TOPIC, names.values())
    return frozenset(k for k, n in names.items() if n not in readable)


async def handle(ctx: RequestContext, header: RequestHeader, request: FetchRequest,
                 version: int) -> FetchResponse | RawResponse:
    uses_ids = version >= 13
    now = ctx.now_ms()
    requested, forgotten = _requested(request, uses_ids)
    session_id, epoch = (request.session_id, request.session_epoch) if version >= 7 else (0, -1)
    fctx = ctx.fetch_sessions.new_context(session_id, epoch, requested, forgotten, uses_ids, now)
    if fctx.error:
        return FetchResponse(error_code=fctx.error, session_id=0, responses=[])
    deadline = now + max(0, request.max_wait_ms)
    read_committed = request.isolation_level == READ_COMMITTED
    denied = _unreadable(ctx, request, version, fctx.partitions, uses_ids)
    while True:
        reads, total = read_partitions(ctx, fctx.partitions, request.max_bytes, uses_ids,
                                       read_committed, denied)
        # At once, as Kafka, when nothing is left to read (`interesting.isEmpty`: a session
        # close, a fetch forgetting its last partition) or a read failed.
        if not reads or total >= request.min_bytes or now >= deadline \
                or any(r.error for r in reads):
            break
        keys = [(r.name, r.cp.key[1]) for r in reads]
        await ctx.wait_for_data(keys, deadline - now)
        now = ctx.now_ms()
    results = [(r.cp, r.hw, r.log_start, r.error, len(r.data)) for r in reads]
    new_session, keep = fctx.finish(results, uses_ids, now)
    response = build_response(reads, keep, new_session, read_committed)
    return encode_fetch_response(response, version)
