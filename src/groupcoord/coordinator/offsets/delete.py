"""OffsetDelete (`OffsetMetadataManager.deleteOffsets`, `ClassicGroup.validateOffsetDelete`).

A non-empty group that does not use the consumer protocol refuses (NON_EMPTY_GROUP); a
consumer group refuses per topic it subscribes to (GROUP_SUBSCRIBED_TO_TOPIC). Otherwise a
tombstone is written for every partition that has a committed or pending transactional
offset.
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.classic.group import ClassicGroup
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.offsets.store import OffsetStore
from groupcoord.coordinator.records import offset_tombstone
from groupcoord.wire.errors import ErrorCode

S = ClassicGroupState


def validate_offset_delete(group: ClassicGroup | None) -> int:
    if group is None or group.is_in(S.DEAD):
        return ErrorCode.GROUP_ID_NOT_FOUND
    if not group.is_in(S.EMPTY) and not group.uses_consumer_protocol():
        return ErrorCode.NON_EMPTY_GROUP
    return ErrorCode.NONE


def delete_offsets(store: OffsetStore, group: ClassicGroup, topics: list[tuple[str, list[int]]],
                   records: list[Any]) -> list[tuple[str, list[tuple[int, int]]]]:
    """Per topic: (partition, error) pairs; appends tombstones to `records`."""
    result = []
    offsets = store.group(group.group_id)
    for name, partitions in topics:
        if group.is_subscribed_to_topic(name):
            result.append((name, [(p, int(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
                                  for p in partitions]))
            continue
        stored = offsets.get(name, {})
        for p in partitions:
            # A partition with only a pending transactional offset gets a tombstone too:
            # replaying it drops the pending offset.
            if p in stored or store.has_pending(group.group_id, name, p):
                records.append(offset_tombstone(group.group_id, name, p))
        result.append((name, [(p, 0) for p in partitions]))
    return result
