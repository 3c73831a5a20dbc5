"""Admin operations on share-partition state: read start offsets and lag, reset the
start offset, delete the state (Kafka: the persister's `readSummary`,
`initializeState`, `deleteState` behind DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets).

A reset or a delete is written to `__share_group_state` (ShareSnapshot / tombstone)
and drops the live share-partition, which is re-initialized from the store on next use.
Each write holds the share-partition's lock (`ShareHost.locked`), so it never lands
between another change's plan and its write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.share.partition import TERMINAL

if TYPE_CHECKING:
    from groupcoord.server.share_host import ShareHost

TERMINAL_STATES = frozenset(int(s) for s in TERMINAL)


@dataclass(frozen=True, slots=True)
class PartitionSummary:
    """What `groupcoord groups` and DescribeShareGroupOffsets show for a share-partition."""

    start_offset: int
    in_flight: int
    acquired: int
    lag: int


def summary(rt: ShareHost, group_id: str, topic: Any, index: int) -> PartitionSummary:
    """Start offset (-1 when never initialized), in-flight and acquired counts, and lag:
    records from the start offset to the log end that are not yet acknowledged or
    archived."""
    key = (group_id, bytes(topic.topic_id), index)
    plog = rt.broker.topics.log(topic.name, index)
    end = plog.log_end_offset if plog is not None else 0
    live = rt.partitions.get(key)
    if live is not None:
        counts = live.counts()
        done = counts["ACKNOWLEDGED"] + counts["ARCHIVED"]
        return PartitionSummary(live.start_offset, live.in_flight_count(), counts["ACQUIRED"],
                                max(0, end - live.start_offset - done))
    persisted = rt.store.get(key)
    if persisted is None or persisted.start_offset < 0:
        return PartitionSummary(-1, 0, 0, 0)
    done = sum(1 for state, _count in persisted.offsets.values() if state in TERMINAL_STATES)
    window = max(persisted.offsets, default=persisted.start_offset - 1) + 1 \
        - persisted.start_offset
    return PartitionSummary(persisted.start_offset, max(0, window), 0,
                            max(0, end - persisted.start_offset - done))


def groups_with_state(rt: ShareHost, group_id: str) -> dict[bytes, set[int]]:
    """Topic id -> partitions that have share state for `group_id`."""
    out: dict[bytes, set[int]] = {}
    for gid, topic_id, index in list(rt.store.states) + list(rt.partitions):
        if gid == group_id:
            out.setdefault(topic_id, set()).add(index)
    return out


async def reset_start_offset(rt: ShareHost, group_id: str, topic: Any, index: int,
                             offset: int) -> None:
    key = (group_id, bytes(topic.topic_id), index)
    async with rt.locked(key):
        rt.drop(key)
        await rt.state.initialize(key, offset)


async def delete_state(rt: ShareHost, group_id: str, topic_id: bytes) -> None:
    for index in sorted(groups_with_state(rt, group_id).get(topic_id, ())):
        key = (group_id, topic_id, index)
        async with rt.locked(key):
            rt.drop(key)
            await rt.state.delete(key)


async def initialize_state(rt: ShareHost, group_id: str, parts: dict[bytes, Any],
                           state_epoch: int, start_offsets: Mapping[bytes, int]) -> None:
    """The persister's `initializeState` for a heartbeat (`GroupCoordinatorService
    .persisterInitialize`): an uninitialized share-partition gets a ShareSnapshot with the
    topic's start offset from `start_offsets`: -1 (the default), which the first fetch
    resolves by `share.auto.offset.reset` as Kafka's `SharePartition` does, or 0 for a new
    partition of a topic the group already knew. Existing state is never overwritten, so a
    retried or duplicate initialization changes nothing."""
    for topic_id, init in sorted(parts.items()):
        start = start_offsets.get(topic_id, -1)
        for index in sorted(init.partitions):
            key = (group_id, topic_id, index)
            async with rt.locked(key):
                if key in rt.partitions or rt.store.get(key) is not None:
                    continue
                await rt.state.initialize(key, start, state_epoch)
