"""Driving the share runtime directly for state tests: a topic with records, the acks as
the wire carries them, and the share state rebuilt from what `__share_group_state` holds."""

from __future__ import annotations

from typing import Any, NamedTuple

from groupcoord.coordinator.share.partition import RecordState, SharePartition
from groupcoord.coordinator.share.state_store import ShareStateStore, share_state_partition
from groupcoord.logformat.batch import build_batch
from groupcoord.logformat.coordinator_records import SHARE, decode_record
from groupcoord.server.log_records import keyed_records
from groupcoord.server.share_state import STATE_TOPIC, STATE_TOPIC_PARTITIONS

GROUP, TOPIC = "sg", "st"


class Ack(NamedTuple):
    """One AcknowledgementBatch of ShareFetch/ShareAcknowledge."""

    first_offset: int
    last_offset: int
    acknowledge_types: list[int]


def make_topic(broker: Any, records: int) -> Any:
    topic = broker.topics.create(TOPIC, 1, {})
    if records:
        broker.append(TOPIC, 0, build_batch([(None, str(i).encode(), (), 0)
                                             for i in range(records)]), 0)
    return topic


def earliest(broker: Any) -> None:
    broker.shares.group_configs.set(GROUP, {"share.auto.offset.reset": "earliest"})


def state_partition(sp: SharePartition) -> int:
    return share_state_partition(sp.key, STATE_TOPIC_PARTITIONS)


def rebuilt(broker: Any, partition: int) -> ShareStateStore:
    """The share state a restart would load from `__share_group_state-<partition>`."""
    store = ShareStateStore()
    for rec in keyed_records(broker.logs.get(STATE_TOPIC, partition)):
        store.replay(decode_record(rec.key, rec.value, SHARE))
    return store


def durable_view(sp: SharePartition) -> tuple[int, dict[int, tuple[int, int]]]:
    """The live share-partition as a restart must see it (acquired = available, one
    delivery less; never-delivered available records left out, as the store does)."""
    offsets = {}
    for b in sp.durable_batches():
        for o in range(b.first_offset, b.last_offset + 1):
            if (b.state, b.delivery_count) != (0, 0):
                offsets[o] = (b.state, b.delivery_count)
    return sp.start_offset, offsets


def kept_as_acknowledged(store: ShareStateStore, key: tuple[str, bytes, int],
                         offset: int) -> bool:
    """The persisted state has `offset` acknowledged (or done: below the start offset,
    which only moves past acknowledged and archived records)."""
    state = store.get(key)
    if state is None:
        return False
    return offset < state.start_offset or \
        state.offsets.get(offset, (-1, 0))[0] == RecordState.ACKNOWLEDGED
