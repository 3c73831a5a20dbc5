"""One `__share_group_state` partition as a coordinator shard (Kafka's
`ShareCoordinatorShard` on the `CoordinatorRuntime`).

The handlers (write, initialize, delete, read share-partition state) read the shard's
`ShareStateStore` and return the records to write; the runtime appends them and only then
calls `replay`, the one path that changes durable share state. Replay also keeps the
broker's live share-partitions of this state partition equal to it (KIP-932 runs the share
coordinator and the share-partitions in one process here): a ShareUpdate or ShareSnapshot
is applied to the live share-partition, a tombstone or a reset behind its window drops it.
While the log loads, only the store is rebuilt; `on_loaded` then reloads every live
share-partition of the partition from it (after a fail-stop, the acquisition locks the log
agrees with are kept: they are soft state) and drops those without state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from groupcoord.coordinator.offsets.store import NO_PRODUCER_ID
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.share.partition import SharePartition
from groupcoord.coordinator.share.records_state import StateBatch
from groupcoord.coordinator.share.state_store import (
    SNAPSHOT_RECORD_TYPE,
    SharePartitionKey,
    ShareStateStore,
    share_state_partition,
    snapshot_record,
    tombstone_record,
)
from groupcoord.logformat.coordinator_records import SHARE


class LiveSharePartitions(Protocol):
    """The broker's live share-partitions, which replay keeps equal to the state."""

    def live(self, key: SharePartitionKey) -> SharePartition | None: ...

    def live_keys(self) -> Iterable[SharePartitionKey]: ...

    def drop(self, key: SharePartitionKey) -> None: ...


class ShareStateShard(Shard):
    """The persisted state of the share-partitions hashed to one state partition."""

    record_types = SHARE

    def __init__(self, partition: int, num_partitions: int, live: LiveSharePartitions) -> None:
        self.partition = partition
        self.num_partitions = num_partitions
        self.store = ShareStateStore()
        self._live = live
        # False while the log loads: live share-partitions are reconciled by on_loaded.
        self._loaded = False

    def owns(self, key: SharePartitionKey) -> bool:
        return share_state_partition(key, self.num_partitions) == self.partition

    def _live_keys(self) -> list[SharePartitionKey]:
        return [key for key in self._live.live_keys() if self.owns(key)]

    # -- replay: the one mutation path of durable share state ---------------------------
    def replay(self, record: Any, offset: int = -1, producer_id: int = NO_PRODUCER_ID,
               producer_epoch: int = -1) -> None:
        self.store.replay(record)
        if not self._loaded:
            return
        key: Any = record.key
        spk = (key.group_id, bytes(key.topic_id), key.partition)
        sp = self._live.live(spk)
        if sp is None:
            return
        value: Any = record.value
        if value is None:
            self._live.drop(spk)
        elif key.RECORD_TYPE == SNAPSHOT_RECORD_TYPE and value.start_offset < sp.start_offset:
            self._live.drop(spk)  # a reset behind the window: initialize again on next use
        else:
            sp.replay(value.start_offset, [StateBatch(b.first_offset, b.last_offset,
                                                      b.delivery_state, b.delivery_count)
                                           for b in value.state_batches])

    def on_loaded(self, now_ms: int) -> None:
        self._loaded = True
        for key in self._live_keys():
            persisted = self.store.get(key)
            sp = self._live.live(key)
            if persisted is None or persisted.start_offset < 0 or sp is None:
                self._live.drop(key)
            else:
                sp.reload(persisted.start_offset, persisted.batches(), persisted.state_epoch)

    def on_unloaded(self) -> None:
        """Another coordinator owns the state now: the live share-partitions go with it
        and initialize from the state again when it is back."""
        for key in self._live_keys():
            self._live.drop(key)

    # -- handlers -----------------------------------------------------------------------
    def write_state(self, key: SharePartitionKey, start_offset: int,
                    changed: Sequence[StateBatch], full: Callable[[], Sequence[StateBatch]],
                    state_epoch: int, now_ms: int) -> Result:
        """WriteShareGroupState: a ShareUpdate of the changed batches, or a ShareSnapshot
        of `full()` when one is due."""
        return Result(records=self.store.write_records(key, start_offset, changed, full,
                                                       now_ms, state_epoch))

    def initialize_state(self, key: SharePartitionKey, start_offset: int, state_epoch: int,
                         now_ms: int) -> Result:
        """InitializeShareGroupState (and a reset of the start offset): a ShareSnapshot."""
        return Result(records=[snapshot_record(key, start_offset, [], now_ms, state_epoch)])

    def delete_state(self, key: SharePartitionKey) -> Result:
        """DeleteShareGroupState: a tombstone, if there is state to delete."""
        if self.store.get(key) is None:
            return Result()
        return Result(records=[tombstone_record(key)])
