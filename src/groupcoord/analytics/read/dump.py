"""``groupcoord analyze dump``: coordinator records as JSON lines, in Kafka's formatter shape.

Mirrors ``org.apache.kafka.tools.consumer.CoordinatorRecordMessageFormatter`` (Kafka 4.x,
the base of ``OffsetsMessageFormatter`` and ``GroupMetadataMessageFormatter``): one object
per record, ``{"key":{"type":T,"data":{...}},"value":{"version":V,"data":{...}}}`` or
``"value":null`` for a tombstone; records with a null key or an unknown type are skipped.
``data`` follows the generated ``*JsonConverter.write``: the spec's field names with the first
letter lowered (``FieldSpec.camelCaseName``: ``GroupId`` -> ``groupId``), fields absent
from the version left out, tagged fields only when they differ from their default, bytes as
base64, uuids as Kafka's ``Uuid.toString`` (URL-safe base64 without padding). Output is
compact (no spaces), as Jackson writes it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from groupcoord.analytics.read.reader import decode_record, iter_raw_records
from groupcoord.analytics.read.schema import COORDINATOR_RECORDS, SHARE_STATE_RECORDS, F, Layout
from groupcoord.analytics.read.segments import list_partitions, resolve_transactions
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC, SHARE_STATE_TOPIC

OFFSETS_TYPES = frozenset({0, 1})  # OffsetsMessageFormatter.shouldPrint
GROUP_METADATA_TYPES = frozenset({2})  # GroupMetadataMessageFormatter.shouldPrint


def uuid_to_string(raw: bytes) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _value_json(f: F, v: Any, version: int) -> Any:
    if v is None:
        return None
    if f.type == "uuid":
        return uuid_to_string(v)
    if f.type == "bytes":
        return base64.b64encode(v).decode("ascii")
    if f.type == "struct":
        if f.array:
            return [struct_json(f.fields, item, version) for item in v]
        return struct_json(f.fields, v, version)
    return v


def struct_json(fields: tuple[F, ...], obj: dict[str, Any], version: int) -> dict[str, Any]:
    """One struct as ``JsonConverter.write`` renders it at ``version``."""
    out: dict[str, Any] = {}
    for f in fields:
        if not f.present(version):
            continue
        v = obj.get(f.name, f.default)
        if f.tag is not None and v == f.default:
            continue
        out[f.name[:1].lower() + f.name[1:]] = _value_json(f, v, version)
    return out


def record_json(
    key: bytes | None, value: bytes | None, table: dict[int, tuple[Layout, Layout]] | None = None
) -> dict[str, Any] | None:
    """The formatter object for one record, or None when Kafka's formatter would skip it."""
    if key is None:
        return None
    layouts = table or COORDINATOR_RECORDS
    rec = decode_record(key, value, layouts)
    if rec is None:
        return None
    key_layout, value_layout = layouts[rec.record_type]
    out: dict[str, Any] = {"key": {"type": rec.record_type,
                                   "data": struct_json(key_layout.fields, rec.key, 0)}}
    if rec.value is None or rec.value_version is None:
        out["value"] = None
    else:
        out["value"] = {"version": rec.value_version,
                        "data": struct_json(value_layout.fields, rec.value, rec.value_version)}
    return out


def dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def iter_dump(
    data_dir: str | Path,
    types: Iterable[int] | None = None,
    topic: str = OFFSETS_TOPIC,
    include_aborted: bool = False,
) -> Iterator[str]:
    """JSON lines for every record of ``topic``'s partitions, in partition then offset order.

    Records of aborted transactions are left out unless ``include_aborted``: a console
    consumer reading ``read_committed`` (the formatter's usual setting) never sees them.
    """
    wanted = frozenset(types) if types is not None else None
    table = SHARE_STATE_RECORDS if topic == SHARE_STATE_TOPIC else COORDINATOR_RECORDS
    for part in list_partitions(data_dir, topic):
        txns = resolve_transactions(part)
        for seg in part.segments():
            for raw in iter_raw_records(seg, 0, None, txns):
                if raw.txn_outcome in ("aborted", "open") and not include_aborted:
                    continue
                if wanted is not None and (raw.key is None or len(raw.key) < 2
                                           or int.from_bytes(raw.key[:2], "big") not in wanted):
                    continue
                obj = record_json(raw.key, raw.value, table)
                if obj is not None:
                    yield dumps(obj)


def write_dump(data_dir: str | Path, out: TextIO, types: Iterable[int] | None = None,
               topic: str = OFFSETS_TOPIC) -> int:
    n = 0
    for line in iter_dump(data_dir, types, topic):
        out.write(line + "\n")
        n += 1
    return n
