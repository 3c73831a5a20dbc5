"""Offset retention (`OffsetMetadataManager.cleanupExpiredOffsets`,
`ClassicGroup.offsetExpirationCondition`, `OffsetExpirationConditionImpl`, KIP-211).

An offset expires when its topic is not subscribed and either its explicit expire
timestamp has passed (v1 values) or `now - base >= retention`, where base is the time the
group became Empty (groups with a protocol), or the commit time (simple groups, Stable
classic consumer groups and KIP-848 consumer groups in any state, for unsubscribed topics).
Rebalancing classic groups never expire offsets. An offset whose partition has a pending
transactional offset waits for the transaction to end. An empty group whose offsets all
expired is deleted, but not while it has open transactions (its pending offsets would
come back as orphans on COMMIT).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.coordinator.classic.effects import Effects
from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.offsets.store import OffsetAndMetadata, OffsetStore
from groupcoord.coordinator.records import offset_tombstone

S = ClassicGroupState

BaseTimestamp = Callable[[OffsetAndMetadata], int]


def expiration_base(group: ClassicGroup) -> BaseTimestamp | None:
    if group.protocol_type is None:
        return lambda o: o.commit_timestamp_ms
    if group.is_in(S.EMPTY):
        ts = group.state_timestamp_ms
        return (lambda o: ts) if ts >= 0 else (lambda o: o.commit_timestamp_ms)
    if group.uses_consumer_protocol() and group.subscribed_topics is not None \
            and group.is_in(S.STABLE):
        return lambda o: o.commit_timestamp_ms
    return None


def is_expired(o: OffsetAndMetadata, base: BaseTimestamp, now_ms: int,
               retention_ms: int) -> bool:
    if o.expire_timestamp_ms >= 0:
        return now_ms >= o.expire_timestamp_ms
    return now_ms - base(o) >= retention_ms


def cleanup_group(store: OffsetStore, group: ClassicGroup, now_ms: int, retention_ms: int,
                  records: list[Any]) -> bool:
    """Tombstones for the group's expired offsets; True when none is left and no
    transaction of the group is open."""
    group_id = group.group_id
    offsets = store.group(group_id)
    if not offsets:
        return not store.has_open_transactions(group_id)
    base = expiration_base(group)
    if base is None:
        return False
    all_expired = True
    for topic in sorted(offsets):
        if group.is_subscribed_to_topic(topic):
            all_expired = False
            continue
        for partition, o in sorted(offsets[topic].items()):
            if is_expired(o, base, now_ms, retention_ms) \
                    and not store.has_pending(group_id, topic, partition):
                records.append(offset_tombstone(group_id, topic, partition))
            else:
                all_expired = False
    return all_expired and not store.has_open_transactions(group_id)


def cleanup_consumer_group(store: OffsetStore, group_id: str, subscribed: set[str],
                           now_ms: int, retention_ms: int, records: list[Any]) -> bool:
    """A KIP-848 group (`ConsumerGroup.offsetExpirationCondition`): base = commit time."""
    offsets = store.group(group_id)
    all_expired = True
    for topic in sorted(offsets):
        if topic in subscribed:
            all_expired = False
            continue
        for partition, o in sorted(offsets[topic].items()):
            if is_expired(o, lambda x: x.commit_timestamp_ms, now_ms, retention_ms) \
                    and not store.has_pending(group_id, topic, partition):
                records.append(offset_tombstone(group_id, topic, partition))
            else:
                all_expired = False
    return all_expired and not store.has_open_transactions(group_id)


def cleanup_modern_group(store: OffsetStore, group_id: str, group_epoch: int,
                         subscribed: set[str], has_members: bool,
                         delete_group: Callable[[list[Any]], None], fx: Effects,
                         retention_ms: int) -> None:
    """A KIP-848 consumer or streams group's clean-up: its expired offsets, then the group
    itself when it is empty and has none left (`maybeDeleteGroup`); `delete_group` writes
    the group's tombstones."""
    before = len(fx.records)
    all_expired = cleanup_consumer_group(store, group_id, subscribed, fx.now_ms, retention_ms,
                                         fx.records)
    if len(fx.records) > before:
        fx.event(group_id, "offsets_expired", group_epoch, partitions=len(fx.records) - before)
    if all_expired and not has_members:
        delete_group(fx.records)
        fx.event(group_id, "group_deleted", group_epoch,
                 reason="empty group with no offsets left")
