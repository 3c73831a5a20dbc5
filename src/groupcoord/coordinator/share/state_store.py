"""Durable share-partition state: the `__share_group_state` records and their replay.

Mirrors Kafka's `ShareCoordinatorShard` (share-coordinator): per (group, topic id,
partition) it keeps the start offset, the state epoch and the state batches, and
`replay` is the only way they change. A ShareSnapshot replaces the state; a
ShareUpdate moves the start offset and overlays its batches (offsets below the start
offset are dropped), as `ShareCoordinatorShard.merge` does. A tombstone deletes the
share-partition (DeleteShareGroupState). A snapshot is written every
`snapshot_every` updates so that compaction keeps the log short.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.partitioning import partition_for
from groupcoord.coordinator.share.records_state import StateBatch
from groupcoord.logformat.coordinator_records import CoordinatorRecord
from groupcoord.logformat.generated.share_snapshot import ShareSnapshotKey, ShareSnapshotValue
from groupcoord.logformat.generated.share_snapshot import StateBatch as SnapshotBatch
from groupcoord.logformat.generated.share_update import ShareUpdateKey, ShareUpdateValue
from groupcoord.logformat.generated.share_update import StateBatch as UpdateBatch

SNAPSHOT_RECORD_TYPE = 0
UPDATE_RECORD_TYPE = 1
SharePartitionKey = tuple[str, bytes, int]


@dataclass(slots=True)
class PersistedState:
    """What `__share_group_state` holds for one share-partition."""

    start_offset: int = -1
    state_epoch: int = 0
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)
    updates_since_snapshot: int = 0

    def batches(self) -> list[StateBatch]:
        out: list[list[int]] = []
        for offset in sorted(self.offsets):
            state, count = self.offsets[offset]
            if out and out[-1][1] == offset - 1 and out[-1][2:] == [state, count]:
                out[-1][1] = offset
            else:
                out.append([offset, offset, state, count])
        return [StateBatch(*run) for run in out]

    def overlay(self, start_offset: int, batches: Sequence[Any]) -> None:
        self.start_offset = start_offset
        for batch in batches:
            for offset in range(batch.first_offset, batch.last_offset + 1):
                self.offsets[offset] = (batch.delivery_state, batch.delivery_count)
        for offset in [o for o in self.offsets if o < start_offset]:
            del self.offsets[offset]


class ShareStateStore:
    """All persisted share-partitions of a broker, rebuilt by `replay`."""

    def __init__(self, snapshot_every: int = 500) -> None:
        self.states: dict[SharePartitionKey, PersistedState] = {}
        self.snapshot_every = snapshot_every

    def get(self, key: SharePartitionKey) -> PersistedState | None:
        return self.states.get(key)

    def replay(self, record: CoordinatorRecord) -> None:
        key: Any = record.key
        spk = (key.group_id, bytes(key.topic_id), key.partition)
        value: Any = record.value
        if value is None:
            self.states.pop(spk, None)
            return
        if key.RECORD_TYPE == SNAPSHOT_RECORD_TYPE:
            state = self.states[spk] = PersistedState(state_epoch=value.state_epoch)
            state.overlay(value.start_offset, value.state_batches)
        else:
            state = self.states.setdefault(spk, PersistedState())
            state.overlay(value.start_offset, value.state_batches)
            state.updates_since_snapshot += 1

    # -- record builders ---------------------------------------------------------------

    def write_records(self, spk: SharePartitionKey, start_offset: int,
                      changed: Sequence[StateBatch], full: Callable[[], Sequence[StateBatch]],
                      now_ms: int, state_epoch: int = 0) -> list[CoordinatorRecord]:
        """A ShareUpdate with the changed batches, or a ShareSnapshot of `full()` (the
        whole window, computed only then) when one is due."""
        current = self.states.get(spk)
        if current is None or current.updates_since_snapshot + 1 >= self.snapshot_every:
            return [snapshot_record(spk, start_offset, full(), now_ms, state_epoch)]
        return [update_record(spk, start_offset, changed)]

    def canonical(self) -> dict[SharePartitionKey, tuple[int, dict[int, tuple[int, int]]]]:
        """The durable state, with never-delivered available offsets left out."""
        return {k: (s.start_offset, {o: v for o, v in s.offsets.items() if v != (0, 0)})
                for k, s in self.states.items()}


def snapshot_record(spk: SharePartitionKey, start_offset: int, batches: Sequence[StateBatch],
                    now_ms: int, state_epoch: int = 0) -> CoordinatorRecord:
    group_id, topic_id, partition = spk
    return CoordinatorRecord(
        ShareSnapshotKey(group_id=group_id, topic_id=topic_id, partition=partition),
        ShareSnapshotValue(
            snapshot_epoch=0, state_epoch=state_epoch, leader_epoch=0,
            start_offset=start_offset, create_timestamp=now_ms, write_timestamp=now_ms,
            state_batches=[SnapshotBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                         delivery_state=b.state,
                                         delivery_count=b.delivery_count) for b in batches]))


def update_record(spk: SharePartitionKey, start_offset: int,
                  batches: Sequence[StateBatch]) -> CoordinatorRecord:
    group_id, topic_id, partition = spk
    return CoordinatorRecord(
        ShareUpdateKey(group_id=group_id, topic_id=topic_id, partition=partition),
        ShareUpdateValue(
            snapshot_epoch=0, leader_epoch=0, start_offset=start_offset,
            state_batches=[UpdateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                       delivery_state=b.state,
                                       delivery_count=b.delivery_count) for b in batches]))


def tombstone_record(spk: SharePartitionKey) -> CoordinatorRecord:
    group_id, topic_id, partition = spk
    return CoordinatorRecord(
        ShareSnapshotKey(group_id=group_id, topic_id=topic_id, partition=partition), None)


def share_state_partition(spk: SharePartitionKey, num_partitions: int) -> int:
    """Kafka's `SharePartitionKey.asCoordinatorKey` ("group:topicId:partition") hashed like
    a group id."""
    group_id, topic_id, partition = spk
    return partition_for(f"{group_id}:{uuid_str(topic_id)}:{partition}", num_partitions)


def uuid_str(topic_id: bytes) -> str:
    """Kafka's `Uuid.toString`: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id).decode().rstrip("=")
