"""ReadShareGroupState (API 84, v0): the state of share-partitions as the share
coordinator holds it — state epoch, start offset and state batches (first offset, last
offset, delivery state, delivery count) per (group, topic id, partition).

In Kafka this is the share-partition leader's read from the share coordinator
(`ShareCoordinatorShard.readState`). Here one process plays both, so the share-fetch path
never sends it; it is served for admin tools (`groupcoord groups describe` counts in-flight
records from it). Because leader and coordinator are one, a share-partition that is loaded
answers with its live window — including ACQUIRED (1) records, which are never persisted —
and one that is not loaded answers with what `__share_group_state` holds.

Errors follow `ShareCoordinatorShard.maybeGetReadStateError`: a negative partition is
INVALID_REQUEST, an unknown topic id or partition UNKNOWN_TOPIC_OR_PARTITION, and a key
without state answers start offset -1, state epoch 0 and no batches. An empty group id
answers no results, as `ShareCoordinatorService.readState` does. Leader epochs are not
fenced: this broker is the only leader, at epoch 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import SHARE_KEY, coordinates
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.read_share_group_state import (
    PartitionResult,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadStateResult,
    StateBatch,
)
from groupcoord.wire.headers import RequestHeader
from groupcoord.wire.kafka_uuid import uuid_text

MIN_VERSION, MAX_VERSION = 0, 0
REQUEST = ReadShareGroupStateRequest
RESPONSE = ReadShareGroupStateResponse

UNINITIALIZED_START_OFFSET = -1


def error_response(request: Any, version: int, code: int) -> ReadShareGroupStateResponse:
    return ReadShareGroupStateResponse(results=[
        ReadStateResult(topic_id=t.topic_id, partitions=[
            PartitionResult(partition=p.partition, error_code=code,
                            start_offset=UNINITIALIZED_START_OFFSET)
            for p in t.partitions])
        for t in request.topics])


def _runs(items: Iterable[tuple[int, int, int]]) -> list[StateBatch]:
    """Merge (offset, state, delivery count) in offset order into state batches."""
    out: list[StateBatch] = []
    for offset, state, count in items:
        last = out[-1] if out else None
        if (last is not None and last.last_offset == offset - 1
                and (last.delivery_state, last.delivery_count) == (state, count)):
            last.last_offset = offset
        else:
            out.append(StateBatch(first_offset=offset, last_offset=offset,
                                  delivery_state=state, delivery_count=count))
    return out


def _live_state(sp: Any) -> tuple[int, int, list[StateBatch]]:
    """(state epoch, start offset, batches) of a loaded share-partition's window."""
    items = ((offset, int(sp.records[offset].state), sp.records[offset].delivery_count)
             for offset in range(sp.start_offset, sp.end_offset))
    return sp.state_epoch, sp.start_offset, _runs(items)


def _persisted_state(state: Any) -> tuple[int, int, list[StateBatch]]:
    """(state epoch, start offset, batches) as `__share_group_state` holds them."""
    batches = [StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                          delivery_state=b.state, delivery_count=b.delivery_count)
               for b in state.batches()]
    return state.state_epoch, state.start_offset, batches


def _partition(ctx: RequestContext, group_id: str, topic: Any, index: int) -> PartitionResult:
    if index < 0:
        return PartitionResult(partition=index, error_code=ErrorCode.INVALID_REQUEST,
                               error_message="The partition id cannot be a negative number.",
                               start_offset=UNINITIALIZED_START_OFFSET)
    if topic is None or index >= topic.num_partitions:
        return PartitionResult(partition=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               start_offset=UNINITIALIZED_START_OFFSET)
    if not coordinates(ctx, SHARE_KEY, f"{group_id}:{uuid_text(bytes(topic.topic_id))}:{index}"):
        return PartitionResult(partition=index, error_code=ErrorCode.NOT_COORDINATOR,
                               start_offset=UNINITIALIZED_START_OFFSET)
    key = (group_id, bytes(topic.topic_id), index)
    live = ctx.shares.partitions.get(key)
    persisted = ctx.shares.store.get(key)
    if live is not None:
        epoch, start, batches = _live_state(live)
    elif persisted is not None and persisted.start_offset >= 0:
        epoch, start, batches = _persisted_state(persisted)
    else:
        epoch, start, batches = 0, UNINITIALIZED_START_OFFSET, []
    return PartitionResult(partition=index, state_epoch=epoch, start_offset=start,
                           state_batches=batches)


async def handle(ctx: RequestContext, header: RequestHeader, request: ReadShareGroupStateRequest,
                 version: int) -> ReadShareGroupStateResponse:
    authz.require_cluster(ctx, authz.Op.CLUSTER_ACTION)  # brokers only
    if not request.group_id:
        return ReadShareGroupStateResponse(results=[])
    results = []
    for data in request.topics:
        topic = ctx.topics.by_id(bytes(data.topic_id))
        results.append(ReadStateResult(topic_id=data.topic_id, partitions=[
            _partition(ctx, request.group_id, topic, p.partition) for p in data.partitions]))
    return ReadShareGroupStateResponse(results=results)
