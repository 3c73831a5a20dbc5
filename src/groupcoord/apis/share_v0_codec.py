"""Version 0 of the share RPCs (Kafka 3.9 / 4.0 early access), hand-written.

The generated codec follows the Kafka 4.4 specs, which dropped v0 of ShareGroupHeartbeat,
ShareGroupDescribe, ShareFetch and ShareAcknowledge; the Java 3.9 `KafkaShareConsumer`
still sends it. The layouts below are the 3.9 JSON specs
(`clients/src/main/resources/common/message/Share*.json` at branch 3.9), all flexible:
compact strings and arrays, an empty tagged-field section after every struct. Compared
with 4.4: ShareFetch v0 has PartitionMaxBytes and no MaxRecords/BatchSize, its response no
AcquisitionLockTimeoutMs; the other layouts equal v1.

`with_v0(cls)` returns a subclass of the generated class that reads and writes v0 with
these layouts and every other version with the generated code; `as_version(obj, 0)`
re-types a generated response so the v0 writer is used.
"""

from __future__ import annotations

from typing import Any

from groupcoord.wire import primitives as p
from groupcoord.wire.generated import share_acknowledge as sa
from groupcoord.wire.generated import share_fetch as sf
from groupcoord.wire.generated import share_group_describe as sgd
from groupcoord.wire.generated import share_group_heartbeat as sgh

Schema = list[tuple[str, Any]]

_TOPIC_PARTITIONS: Schema = [("topic_id", "uuid"), ("partitions", "[i32]")]
_HB_ASSIGNMENT: Schema = [("topic_partitions", ("[]", _TOPIC_PARTITIONS, sgh.TopicPartitions))]
_LEADER: Schema = [("leader_id", "i32"), ("leader_epoch", "i32")]
_NODE: Schema = [("node_id", "i32"), ("host", "str"), ("port", "i32"), ("rack", "nstr")]
_ACK_BATCH: Schema = [("first_offset", "i64"), ("last_offset", "i64"),
                      ("acknowledge_types", "[i8]")]

SCHEMAS: dict[type, Schema] = {
    sgh.ShareGroupHeartbeatRequest: [
        ("group_id", "str"), ("member_id", "str"), ("member_epoch", "i32"),
        ("rack_id", "nstr"), ("subscribed_topic_names", "n[str]")],
    sgh.ShareGroupHeartbeatResponse: [
        ("throttle_time_ms", "i32"), ("error_code", "i16"), ("error_message", "nstr"),
        ("member_id", "nstr"), ("member_epoch", "i32"), ("heartbeat_interval_ms", "i32"),
        ("assignment", ("nstruct", _HB_ASSIGNMENT, sgh.Assignment))],
    sgd.ShareGroupDescribeRequest: [
        ("group_ids", "[str]"), ("include_authorized_operations", "bool")],
    sgd.ShareGroupDescribeResponse: [
        ("throttle_time_ms", "i32"),
        ("groups", ("[]", [
            ("error_code", "i16"), ("error_message", "nstr"), ("group_id", "str"),
            ("group_state", "str"), ("group_epoch", "i32"), ("assignment_epoch", "i32"),
            ("assignor_name", "str"),
            ("members", ("[]", [
                ("member_id", "str"), ("rack_id", "nstr"), ("member_epoch", "i32"),
                ("client_id", "str"), ("client_host", "str"),
                ("subscribed_topic_names", "[str]"),
                ("assignment", ("struct", [("topic_partitions", ("[]", [
                    ("topic_id", "uuid"), ("topic_name", "str"), ("partitions", "[i32]")],
                    sgd.TopicPartitions))], sgd.Assignment))], sgd.Member)),
            ("authorized_operations", "i32")], sgd.DescribedGroup))],
    sf.ShareFetchRequest: [
        ("group_id", "nstr"), ("member_id", "nstr"), ("share_session_epoch", "i32"),
        ("max_wait_ms", "i32"), ("min_bytes", "i32"), ("max_bytes", "i32"),
        ("topics", ("[]", [("topic_id", "uuid"), ("partitions", ("[]", [
            ("partition_index", "i32"), ("partition_max_bytes", "i32"),
            ("acknowledgement_batches", ("[]", _ACK_BATCH, sf.AcknowledgementBatch))],
            sf.FetchPartition))], sf.FetchTopic)),
        ("forgotten_topics_data", ("[]", _TOPIC_PARTITIONS, sf.ForgottenTopic))],
    sf.ShareFetchResponse: [
        ("throttle_time_ms", "i32"), ("error_code", "i16"), ("error_message", "nstr"),
        ("responses", ("[]", [("topic_id", "uuid"), ("partitions", ("[]", [
            ("partition_index", "i32"), ("error_code", "i16"), ("error_message", "nstr"),
            ("acknowledge_error_code", "i16"), ("acknowledge_error_message", "nstr"),
            ("current_leader", ("struct", _LEADER, sf.LeaderIdAndEpoch)),
            ("records", "records"),
            ("acquired_records", ("[]", [("first_offset", "i64"), ("last_offset", "i64"),
                                         ("delivery_count", "i16")], sf.AcquiredRecords))],
            sf.PartitionData))], sf.ShareFetchableTopicResponse)),
        ("node_endpoints", ("[]", _NODE, sf.NodeEndpoint))],
    sa.ShareAcknowledgeRequest: [
        ("group_id", "nstr"), ("member_id", "nstr"), ("share_session_epoch", "i32"),
        ("topics", ("[]", [("topic_id", "uuid"), ("partitions", ("[]", [
            ("partition_index", "i32"),
            ("acknowledgement_batches", ("[]", _ACK_BATCH, sa.AcknowledgementBatch))],
            sa.AcknowledgePartition))], sa.AcknowledgeTopic))],
    sa.ShareAcknowledgeResponse: [
        ("throttle_time_ms", "i32"), ("error_code", "i16"), ("error_message", "nstr"),
        ("responses", ("[]", [("topic_id", "uuid"), ("partitions", ("[]", [
            ("partition_index", "i32"), ("error_code", "i16"), ("error_message", "nstr"),
            ("current_leader", ("struct", _LEADER, sa.LeaderIdAndEpoch))],
            sa.PartitionData))], sa.ShareAcknowledgeTopicResponse)),
        ("node_endpoints", ("[]", _NODE, sa.NodeEndpoint))],
}

_INTS = {"i8": (1, True), "i16": (2, True), "i32": (4, True), "i64": (8, True)}


# -- decoding --------------------------------------------------------------------------

def _read_len(buf: Any, pos: int) -> tuple[int, int]:
    n, pos = p.read_uvarint(buf, pos)
    return n - 1, pos


def _read_int(buf: Any, pos: int, size: int) -> tuple[int, int]:
    end = pos + size
    if end > len(buf):
        p.raise_decode_error("truncated integer")
    return int.from_bytes(buf[pos:end], "big", signed=True), end


def _read_value(buf: Any, pos: int, kind: Any) -> tuple[Any, int]:
    if isinstance(kind, tuple):
        shape, schema, cls = kind
        if shape == "[]":
            n, pos = _read_len(buf, pos)
            items = []
            for _ in range(max(n, 0)):
                item, pos = read_struct(buf, pos, schema, cls)
                items.append(item)
            return items, pos
        if shape == "nstruct":
            marker, pos = _read_int(buf, pos, 1)
            if marker < 0:
                return None, pos
        return read_struct(buf, pos, schema, cls)
    if kind in _INTS:
        return _read_int(buf, pos, _INTS[kind][0])
    if kind == "bool":
        return p.read_bool(buf, pos)
    if kind == "uuid":
        return p.read_uuid(buf, pos)
    if kind == "str":
        return p.read_compact_string(buf, pos)
    if kind == "nstr":
        return p.read_compact_nullable_string(buf, pos)
    if kind == "records":
        return p.read_compact_nullable_bytes(buf, pos)
    n, pos = _read_len(buf, pos)
    if n < 0:
        return None, pos
    elem = {"[i32]": ("i32",), "[i8]": ("i8",)}.get(kind, ("str",))[0]
    out = []
    for _ in range(n):
        value, pos = _read_value(buf, pos, elem)
        out.append(value)
    return out, pos


def read_struct(buf: Any, pos: int, schema: Schema, cls: type) -> tuple[Any, int]:
    values = {}
    for name, kind in schema:
        values[name], pos = _read_value(buf, pos, kind)
    return cls(**values), p.skip_tagged_fields(buf, pos)


# -- encoding --------------------------------------------------------------------------

def _write_value(out: bytearray, kind: Any, value: Any) -> None:
    if isinstance(kind, tuple):
        shape, schema, _cls = kind
        if shape == "[]":
            p.write_uvarint(out, len(value) + 1)
            for item in value:
                write_struct(out, schema, item)
            return
        if shape == "nstruct":
            if value is None:
                out.append(0xFF)
                return
            out.append(1)
        write_struct(out, schema, value)
    elif kind in _INTS:
        out += int(value).to_bytes(_INTS[kind][0], "big", signed=True)
    elif kind == "bool":
        p.write_bool(out, bool(value))
    elif kind == "uuid":
        p.write_uuid(out, value)
    elif kind in ("str", "nstr"):
        p.write_compact_nullable_string(out, value)
    elif kind == "records":
        p.write_compact_nullable_bytes(out, value)
    elif value is None:
        out.append(0)
    else:
        p.write_uvarint(out, len(value) + 1)
        elem = {"[i32]": "i32", "[i8]": "i8"}.get(kind, "str")
        for item in value:
            _write_value(out, elem, item)


def write_struct(out: bytearray, schema: Schema, obj: Any) -> None:
    for name, kind in schema:
        # The schema names the fields: a by-name walk, as the generated encoders do.
        _write_value(out, kind, getattr(obj, name))
    out.append(0)  # no tagged fields


# -- the version switch ----------------------------------------------------------------

_SUBCLASSES: dict[type, type] = {}


def with_v0(cls: type) -> type:
    """A subclass of generated `cls` that also speaks version 0."""
    sub = _SUBCLASSES.get(cls)
    if sub is not None:
        return sub
    schema = SCHEMAS[cls]
    base: Any = cls

    class V0(base):  # type: ignore[misc, valid-type]
        __slots__ = ()
        MIN_VERSION = 0

        @classmethod
        def decode(klass, buf: Any, pos: int = 0, version: int = 0) -> tuple[Any, int]:
            if version == 0:
                if not isinstance(buf, bytes):
                    buf = bytes(buf)
                return read_struct(buf, pos, schema, klass)
            return base.decode.__func__(klass, buf, pos, version)

        def encode(self, version: int) -> bytes:
            if version == 0:
                out = bytearray()
                write_struct(out, schema, self)
                return bytes(out)
            return base.encode(self, version)  # type: ignore[no-any-return]

        def encode_into(self, out: bytearray, version: int) -> None:
            if version == 0:
                write_struct(out, schema, self)
            else:
                base.encode_into(self, out, version)

        def encode_parts(self, version: int) -> list[Any]:
            if version == 0:
                return [self.encode(0)]
            return base.encode_parts(self, version)  # type: ignore[no-any-return]

    V0.__name__ = V0.__qualname__ = cls.__name__
    _SUBCLASSES[cls] = V0
    return V0


def as_version(obj: Any, version: int) -> Any:
    """Re-type a generated message so that `encode(0)` uses the v0 layout."""
    if version == 0 and type(obj) in SCHEMAS:
        obj.__class__ = with_v0(type(obj))
    return obj
