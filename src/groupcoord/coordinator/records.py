"""Builders for the classic-group and offset records of `__consumer_offsets`.

Mirrors Kafka's `GroupCoordinatorRecordHelpers`: GroupMetadataValue is written at version 3;
OffsetCommitValue at version 1 when the commit carries an explicit expire timestamp
(OffsetCommit v2-4 RetentionTimeMs), else version 4. A `None` value is a tombstone.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.logformat.coordinator_records import CoordinatorRecord, encode_key
from groupcoord.logformat.generated.group_metadata import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
)
from groupcoord.logformat.generated.offset_commit import OffsetCommitKey, OffsetCommitValue
from groupcoord.wire.messages import WireStruct

GROUP_METADATA_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION = 4
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
UUID_ZERO = bytes(16)


def _record(key: WireStruct, value: WireStruct | None, version: int | None
            ) -> CoordinatorRecord:
    return CoordinatorRecord(key, value, version)


def group_metadata_record(
    group_id: str,
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    current_state_timestamp: int,
    members: Iterable[MemberMetadata],
) -> CoordinatorRecord:
    value = GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        current_state_timestamp=current_state_timestamp,
        members=list(members),
    )
    return _record(GroupMetadataKey(group=group_id), value, GROUP_METADATA_VALUE_VERSION)


def group_tombstone(group_id: str) -> CoordinatorRecord:
    return _record(GroupMetadataKey(group=group_id), None, None)


def offset_commit_record(
    group_id: str,
    topic: str,
    partition: int,
    offset: int,
    leader_epoch: int,
    metadata: str,
    commit_timestamp_ms: int,
    expire_timestamp_ms: int,
    topic_id: bytes,
) -> CoordinatorRecord:
    has_expiry = expire_timestamp_ms >= 0
    if has_expiry:
        # Version 1 has neither leader epoch nor topic id; build the value as replay of the
        # stored bytes will see it, so live and reloaded state agree.
        leader_epoch, topic_id = -1, UUID_ZERO
    value = OffsetCommitValue(
        offset=offset,
        leader_epoch=leader_epoch,
        metadata=metadata,
        commit_timestamp=commit_timestamp_ms,
        expire_timestamp=expire_timestamp_ms,
        topic_id=topic_id,
    )
    version = OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY if has_expiry else OFFSET_COMMIT_VALUE_VERSION
    key = OffsetCommitKey(group=group_id, topic=topic, partition=partition)
    record = _record(key, value, version)
    record.encoded_key = _offset_key_bytes(key)
    return record


# A consumer commits the same partitions again and again: their encoded keys are kept
# (the cache starts over when it has grown large).
OFFSET_KEY_CACHE_SIZE = 100_000
_offset_keys: dict[tuple[str, str, int], bytes] = {}


def _offset_key_bytes(key: OffsetCommitKey) -> bytes | None:
    """The key's bytes; None when it cannot be encoded (the write refuses it later)."""
    ident = (key.group, key.topic, key.partition)
    encoded = _offset_keys.get(ident)
    if encoded is None:
        try:
            encoded = encode_key(key)
        except ValueError:
            return None
        if len(_offset_keys) >= OFFSET_KEY_CACHE_SIZE:
            _offset_keys.clear()
        _offset_keys[ident] = encoded
    return encoded


def offset_tombstone(group_id: str, topic: str, partition: int) -> CoordinatorRecord:
    return _record(OffsetCommitKey(group=group_id, topic=topic, partition=partition), None, None)
