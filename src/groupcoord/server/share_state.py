"""The `__share_group_state` side of share groups: write, replay, fail-stop and reload.

Mirrors Kafka's `ShareCoordinatorShard` on its `CoordinatorRuntime` (records first, then
replay), joined in one process with the broker's share-partitions:

- `write(key, records)` appends the records to `__share_group_state-<p>` as one batch and
  only then replays them: into the `ShareStateStore` (every share-partition's persisted
  state) and into the live `SharePartition` of that key, if there is one. Replay is the
  one mutation path of durable share state, so memory is always what a replay of the
  log rebuilds.
- A failed append fail-stops the state partition: whatever the write left is cut off,
  the store's entries of that partition are rebuilt from its log and each live
  share-partition of it is reloaded (keeping the acquisition locks the log agrees with,
  which are soft state); the caller gets COORDINATOR_NOT_AVAILABLE (retriable), as
  Kafka's persister maps a share coordinator that cannot write. The reload is synchronous,
  so no request ever sees the partition half-loaded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.share.records_state import StateBatch
from groupcoord.coordinator.share.state_store import (
    SNAPSHOT_RECORD_TYPE,
    SharePartitionKey,
    ShareStateStore,
    share_state_partition,
)
from groupcoord.logformat.internal_topics import SHARE_STATE_TOPIC as STATE_TOPIC
from groupcoord.server.log_records import keyed_records
from groupcoord.server.shard_log import encode_records_batch
from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.clock import Clock
    from groupcoord.coordinator.share.partition import SharePartition
    from groupcoord.logformat.coordinator_records import CoordinatorRecord
    from groupcoord.server.broker import Broker

log = logging.getLogger("groupcoord.share")

STATE_TOPIC_PARTITIONS = 50
STATE_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}


class ShareStateLog:
    """The persisted share state of every share-partition, and the live ones to keep
    equal to it (`live(key)` finds a live share-partition)."""

    def __init__(self, broker: Broker, clock: Clock,
                 live: Callable[[SharePartitionKey], SharePartition | None],
                 live_keys: Callable[[], Iterable[SharePartitionKey]],
                 drop: Callable[[SharePartitionKey], None]) -> None:
        self.broker = broker
        self.clock = clock
        self.store = ShareStateStore()
        self._live = live
        self._live_keys = live_keys
        self._drop = drop
        # How many times a state partition failed and was reloaded (for tests and logs).
        self.reloads = 0
        # The seam every share-state append goes through (tests inject faults here).
        self.append: Callable[..., Any] = broker.append

    def start(self) -> int:
        self.broker.topics.ensure_internal(STATE_TOPIC, STATE_TOPIC_PARTITIONS,
                                           STATE_TOPIC_CONFIGS)
        return sum(self._load(p) for p in range(STATE_TOPIC_PARTITIONS))

    def _load(self, partition: int) -> int:
        from groupcoord.logformat.coordinator_records import SHARE, decode_record

        count = 0
        for rec in keyed_records(self.broker.logs.get(STATE_TOPIC, partition)):
            try:
                record = decode_record(rec.key, rec.value, SHARE)
            except ValueError:
                continue
            self.store.replay(record)
            count += 1
        return count

    # -- the write path -----------------------------------------------------------------

    def write(self, key: SharePartitionKey, records: list[CoordinatorRecord]) -> None:
        """Append, then replay; ApiError(COORDINATOR_NOT_AVAILABLE) after a failed append
        (the partition was reloaded)."""
        partition = share_state_partition(key, STATE_TOPIC_PARTITIONS)
        now = self.clock.now_ms()
        end_before = self._log_end(partition)
        try:
            self.append(STATE_TOPIC, partition, encode_records_batch(records, now), now)
        except Exception:
            log.exception("append to %s-%d failed; reloading it from its log",
                          STATE_TOPIC, partition)
            self.reload(partition, end_before)
            raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE) from None
        for record in records:
            self.replay(record)

    def replay(self, record: CoordinatorRecord) -> None:
        self.store.replay(record)
        key: Any = record.key
        spk = (key.group_id, bytes(key.topic_id), key.partition)
        sp = self._live(spk)
        if sp is None:
            return
        value: Any = record.value
        if value is None:
            self._drop(spk)
        elif key.RECORD_TYPE == SNAPSHOT_RECORD_TYPE and value.start_offset < sp.start_offset:
            self._drop(spk)  # a reset behind the window: initialize again on next use
        else:
            sp.replay(value.start_offset, [StateBatch(b.first_offset, b.last_offset,
                                                      b.delivery_state, b.delivery_count)
                                           for b in value.state_batches])

    # -- fail-stop ----------------------------------------------------------------------

    def reload(self, partition: int, end_before: int) -> None:
        """Cut off what a failed write left, rebuild the partition's persisted state from
        its log and reload its live share-partitions from that."""
        self.reloads += 1
        plog = self.broker.logs.get(STATE_TOPIC, partition)
        if plog is not None and plog.log_end_offset > end_before:
            try:
                plog.truncate_to(end_before)
            except Exception:
                log.exception("cannot cut %s-%d back to %d", STATE_TOPIC, partition,
                              end_before)
        for key in [k for k in self.store.states
                    if share_state_partition(k, STATE_TOPIC_PARTITIONS) == partition]:
            del self.store.states[key]
        self._load(partition)
        for key in list(self._live_keys()):
            if share_state_partition(key, STATE_TOPIC_PARTITIONS) != partition:
                continue
            persisted = self.store.get(key)
            sp = self._live(key)
            if persisted is None or persisted.start_offset < 0 or sp is None:
                self._drop(key)
            else:
                sp.reload(persisted.start_offset, persisted.batches(), persisted.state_epoch)

    def _log_end(self, partition: int) -> int:
        plog = self.broker.logs.get(STATE_TOPIC, partition)
        return 0 if plog is None else int(plog.log_end_offset)
