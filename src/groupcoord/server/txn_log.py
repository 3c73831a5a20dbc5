"""Transactions on data partitions: producer state upkeep, markers, LSO, aborted index.

Mirrors the transactional half of `UnifiedLog.append` / `analyzeAndValidateProducerState`
(open a transaction on its first transactional batch, close it on the marker, index aborts
in the `.txnindex`), `ReplicaManager.appendRecords` for `WriteTxnMarkers` (the coordinator's
marker append with its epoch checks) and `UnifiedLog.lastStableOffset`.

Rules kept:
- every append of the broker goes through `track_append`, so batches written by the group
  coordinator (TxnOffsetCommit and its markers on `__consumer_offsets`) are tracked like
  produced ones;
- a partition's producer state is rebuilt from its log before its first append or
  read_committed read after start-up, and the rebuild brings the `.txnindex` files in line
  with the markers found (a crash between a marker write and its index write, or a lost
  index, heals here);
- a marker is refused with INVALID_PRODUCER_EPOCH when older than the producer's epoch
  and TRANSACTION_COORDINATOR_FENCED when the coordinator epoch went back.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from groupcoord.logformat.batch import build_end_txn_marker, iter_batches
from groupcoord.server.producer_state import PartitionProducerState
from groupcoord.storage.transactions import (
    append_aborted_txn,
    read_marker,
    scan_batches,
    sync_aborted_txns,
)
from groupcoord.storage.txn_index import AbortedTxn
from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.server.broker_ports import CoordinatorHost

log = logging.getLogger("groupcoord.server")



def load_producer_state(broker: CoordinatorHost, topic: str,
                        partition: int) -> PartitionProducerState:
    """Rebuild a partition's producer state from its log and heal its aborted index."""
    plog = broker.topics.log(topic, partition)
    if plog is None:
        return broker.producers.load_partition(topic, partition, ())[0]
    state, aborted = broker.producers.load_partition(topic, partition, scan_batches(plog))
    fixed = sync_aborted_txns(plog, [AbortedTxn(*entry) for entry in aborted])
    if fixed:
        log.warning("%s-%d: rebuilt the aborted-transaction index of %d segment(s)", topic,
                    partition, fixed)
    return state


def track_append(state: PartitionProducerState, plog: Any, data: Any,
                 headers: list[Any]) -> None:
    """After an append: open transactions on transactional data batches, close them on
    markers and index aborts."""
    markers = None
    for i, h in enumerate(headers):
        if h.producer_id < 0 or not (h.is_transactional or h.is_control):
            continue
        if not h.is_control:
            state.open_txn(h.producer_id, h.producer_epoch, h.base_offset)
            continue
        if markers is None:
            markers = [view for _, view in iter_batches(data)]
        marker = read_marker(markers[i]) if i < len(markers) else None
        if marker is None:
            continue
        aborted = state.end_txn(h.producer_id, h.producer_epoch, marker[1], h.base_offset,
                                marker[0], h.max_timestamp)
        if aborted is not None:
            append_aborted_txn(plog, AbortedTxn(*aborted))


async def write_marker(broker: CoordinatorHost, topic: str, partition: int,
                       producer_id: int, producer_epoch: int, coordinator_epoch: int,
                       commit: bool, now_ms: int) -> int:
    """Append a COMMIT/ABORT marker to a data partition (WriteTxnMarkers); an error code.
    Checked and appended under the partition's append lock, as a produced batch is."""
    plog = broker.topics.log(topic, partition)
    if plog is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    async with broker.append_lock(topic, partition):
        state = broker.producer_state(topic, partition)
        error = state.check_marker(producer_id, producer_epoch, coordinator_epoch)
        if error:
            return error
        batch = build_end_txn_marker(1 if commit else 0, producer_id, producer_epoch, now_ms,
                                     coordinator_epoch=coordinator_epoch)
        await broker.append_async(topic, partition, batch, now_ms, allow_control=True)
    return 0


def last_stable_offset(broker: CoordinatorHost, topic: str, partition: int,
                       high_watermark: int) -> int:
    return broker.producer_state(topic, partition).last_stable_offset(high_watermark)
