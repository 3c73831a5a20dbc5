"""Framing of coordinator records: the key and value bytes of ``__consumer_offsets`` and
``__share_group_state`` records.

Mirrors Kafka's ``CoordinatorRecordSerde`` (``coordinator-common``) with
``GroupCoordinatorRecordSerde`` / ``ShareCoordinatorRecordSerde``:

- key bytes = int16 record type (the ``apiKey`` of the key spec) + key struct at version 0;
- value bytes = int16 value version + value struct at that version;
- a null value is a tombstone;
- an unknown record type raises :class:`UnknownRecordTypeError`, which a loader catches and
  skips (Kafka logs and skips records "left over from an aborted upgrade"); every other
  malformation raises :class:`~groupcoord.wire.errors.DecodeError`.

The value versions written are Kafka's (``GroupCoordinatorRecordHelpers``): OffsetCommitValue
v3, or v1 when an expire timestamp is set; GroupMetadataValue v3 (the highest non-flexible
version); every other record v0.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from groupcoord.logformat.generated.group_metadata import GroupMetadataValue
from groupcoord.logformat.generated.offset_commit import OffsetCommitValue
from groupcoord.wire.errors import DecodeError
from groupcoord.wire.messages import WireStruct
from groupcoord.wire.primitives import Buffer

_TYPE = struct.Struct(">h")


class UnknownRecordTypeError(DecodeError):
    """A record type this broker does not know; the loader skips such records."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown coordinator record type {record_type}")
        self.record_type = record_type


class RecordTypes:
    """The key and value classes of one coordinator's topic, by record type.

    The generated index imports every record module; it is loaded on the first decode, not
    at start-up (a broker that has not read a coordinator log yet needs none of them).
    """

    __slots__ = ("_index_prefix", "keys", "values")
    keys: dict[int, type[WireStruct]]
    values: dict[int, type[WireStruct]]

    def __init__(self, index_prefix: str) -> None:
        self._index_prefix = index_prefix

    def __getattr__(self, name: str) -> dict[int, type[WireStruct]]:
        # Reached only while `keys`/`values` are unset: fill both from the index.
        if name not in ("keys", "values"):
            raise AttributeError(name)
        from groupcoord.logformat.generated import coordinator_records as index

        self.keys = getattr(index, f"{self._index_prefix}_KEYS")
        self.values = getattr(index, f"{self._index_prefix}_VALUES")
        table: dict[int, type[WireStruct]] = getattr(self, name)
        return table


#: ``__consumer_offsets`` (group coordinator).
GROUP = RecordTypes("GROUP")
#: ``__share_group_state`` (share coordinator); its type numbers overlap GROUP's.
SHARE = RecordTypes("SHARE")


@dataclass
class CoordinatorRecord:
    """One coordinator record: a key struct and a value struct, or ``None`` for a tombstone.

    ``value_version`` is the version the value was read at, or to write it at; ``None``
    means the version Kafka writes for that record (see :func:`value_version`).
    """

    key: WireStruct
    value: WireStruct | None
    value_version: int | None = None
    # `encode_key(key)` when the builder had it at hand (see `coordinator.records`).
    encoded_key: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def record_type(self) -> int:
        return record_type_of(self.key)

    def key_bytes(self) -> bytes:
        encoded = self.encoded_key
        return encode_key(self.key) if encoded is None else encoded

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        return encode_value(self.value, self.value_version)


def record_type_of(key: WireStruct) -> int:
    record_type: int = key.RECORD_TYPE  # type: ignore[attr-defined]
    return record_type


def value_version(value: WireStruct) -> int:
    """The value version Kafka writes for ``value``."""
    if isinstance(value, OffsetCommitValue):
        return 1 if value.expire_timestamp != -1 else 3
    if isinstance(value, GroupMetadataValue):
        return 3
    return 0


def encode_key(key: WireStruct) -> bytes:
    return _TYPE.pack(record_type_of(key)) + key.encode(0)


def encode_value(value: WireStruct, version: int | None = None) -> bytes:
    """int16 version + value struct; ``version=None`` picks the version Kafka writes."""
    if version is None:
        version = value_version(value)
    return _TYPE.pack(version) + value.encode(version)


def _read_short(buf: Buffer, what: str) -> int:
    if len(buf) < 2:
        raise DecodeError(f"coordinator record {what} shorter than 2 bytes")
    short: int = _TYPE.unpack_from(buf, 0)[0]
    return short


def decode_key(buf: Buffer, types: RecordTypes = GROUP) -> WireStruct:
    """Decode key bytes; raises UnknownRecordTypeError for types not in ``types``."""
    record_type = _read_short(buf, "key")
    cls = types.keys.get(record_type)
    if cls is None:
        raise UnknownRecordTypeError(record_type)
    key, _ = cls.decode(buf, 2, 0)
    return key


def decode_value_versioned(record_type: int, buf: Buffer | None,
                           types: RecordTypes = GROUP) -> tuple[WireStruct | None, int | None]:
    """Decode value bytes into ``(value, version)``; ``(None, None)`` for a tombstone."""
    if buf is None:
        return None, None
    cls = types.values.get(record_type)
    if cls is None:
        raise UnknownRecordTypeError(record_type)
    version = _read_short(buf, "value")
    value, _ = cls.decode(buf, 2, version)
    return value, version


def decode_value(record_type: int, buf: Buffer | None,
                 types: RecordTypes = GROUP) -> WireStruct | None:
    """Decode value bytes of a record of ``record_type``; None for a tombstone."""
    return decode_value_versioned(record_type, buf, types)[0]


def decode_record(key: Buffer, value: Buffer | None,
                  types: RecordTypes = GROUP) -> CoordinatorRecord:
    """Decode one record's key and value bytes."""
    key_obj = decode_key(key, types)
    value_obj, version = decode_value_versioned(record_type_of(key_obj), value, types)
    return CoordinatorRecord(key_obj, value_obj, version)
