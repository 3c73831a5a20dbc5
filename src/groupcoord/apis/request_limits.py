"""Request field limits: every string a request carries must fit the coordinator's records.

Checked by the dispatcher on every decoded request, before its handler runs, so an
oversized field never reaches a coordinator shard (issue 10: a 40,000-byte group id made
`encode_key` fail inside the shard, which then reloaded on every such request).

What the log format can hold (`../shared/kafka-spec-4.4/records`, `share-records`, and the
transaction log): the records Kafka writes keep non-flexible versions, where a STRING has
an int16 length, so at most 32,767 bytes of UTF-8 (`GroupMetadataKey`/`OffsetCommitKey` v0,
`OffsetCommitValue` v1/v3, `GroupMetadataValue` v3, `TransactionLogKey` v0). BYTES (int32
length) and arrays (int32 count) cannot overflow: a request is at most
`socket.request.max.bytes` (100 MiB) and each element takes at least one byte.

What Kafka does: its generated request readers refuse any string longer than 0x7fff
bytes in every version, flexible ones included (`MessageDataGenerator
.generateVariableLengthReader`: "string field ... had invalid length"), so such a string
never reaches Kafka's `GroupCoordinatorService`. `RequestContext.parseRequest` turns the
failure into `InvalidRequestException` and `SocketServer` closes the connection.

Our choice (issue 10): the same limit, 32,767 bytes for every string field of every
request, but answered with a Kafka error so the client learns why and the connection stays
usable: INVALID_GROUP_ID (24) when the field is a group id, as Kafka answers a group id it
cannot accept (`GroupCoordinatorService.isGroupIdNotEmpty` for JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit ...); INVALID_REQUEST (42, Kafka's
`InvalidRequestException`) for every other
field (member and instance ids, protocol names, topic names, transactional ids, metadata
strings, config names and values). The whole request is refused, as its parse fails in
Kafka, so no per-field code applies: not INVALID_TOPIC_EXCEPTION for a topic name (Kafka's
group APIs answer an illegal but parseable topic name UNKNOWN_TOPIC_OR_PARTITION), and
Kafka has no transactional-id code (`TransactionCoordinator.handleInitProducerId` answers an
empty one INVALID_REQUEST). An API whose response cannot carry an error closes the
connection, which is exactly Kafka's answer.

Cost: no field can be longer than the frame holding it, so a frame of at most 32,767
bytes (every heartbeat) is accepted after one comparison; only larger frames are walked,
and only through the fields of each class that can hold a string (a field's type is the
same in every version, so a class's default instance tells which fields are numbers or
bytes).
"""

from __future__ import annotations

from groupcoord.security.settings import Settings
from groupcoord.wire import error_code_numbers as codes
from groupcoord.wire.messages import WireStruct

#: The longest string a request may carry: Kafka's reader limit, and the int16 length of
#: a STRING in the non-flexible record versions the coordinators write.
MAX_STRING_BYTES = 0x7FFF
#: A str of at most this many code points cannot exceed MAX_STRING_BYTES in UTF-8
#: (at most 4 bytes each), so it needs no encoding to be checked.
_ALWAYS_FITS = MAX_STRING_BYTES // 4

#: Field names (snake_case, any nesting) that hold group ids in the coordinator APIs:
#: `group_id` (JoinGroup ... OffsetFetch v8+ `groups[].group_id`), DescribeGroups
#: `groups`, DeleteGroups `groups_names`, Consumer/ShareGroupDescribe `group_ids`.
GROUP_ID_FIELDS = frozenset({"group_id", "groups", "groups_names", "group_ids"})


class FieldRejection(Settings):
    """Why a request is refused before its handler: the field path and the error code.
    (A `Settings` record: loaded before the broker binds its listeners, where a dataclass
    costs its generated code and a NamedTuple its `exec`.)"""

    field: str
    code: int
    size: int

    @property
    def message(self) -> str:
        return (f"Field {self.field} is {self.size} bytes long; "
                f"the longest accepted is {MAX_STRING_BYTES} bytes")


def check_request(request: WireStruct, frame_size: int) -> FieldRejection | None:
    """The rejection of the first oversized string field of `request`, or None.

    `frame_size` is the size of the frame the request was decoded from: a bound on every
    field's length, which lets small requests skip the walk.
    """
    if frame_size <= MAX_STRING_BYTES:
        return None
    found = _scan(request, _text_fields(type(request)))
    if found is None:
        return None
    path, size = found
    leaf = path.rsplit(".", 1)[-1]
    code = codes.INVALID_GROUP_ID if leaf in GROUP_ID_FIELDS else codes.INVALID_REQUEST
    return FieldRejection(path, code, size)


def _oversized_size(text: str) -> int:
    """The UTF-8 size of `text` when it exceeds MAX_STRING_BYTES, else 0."""
    if len(text) <= _ALWAYS_FITS:
        return 0
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > MAX_STRING_BYTES else 0


_NO_STRINGS = (int, bool, float, bytes)
_TEXT_FIELDS: dict[type, tuple[str, ...]] = {}


def _text_fields(cls: type[WireStruct]) -> tuple[str, ...]:
    """The fields of `cls` that may hold a string, directly or nested: all but those whose
    default value is a number or bytes (strings, arrays, structs and nullable fields)."""
    fields = _TEXT_FIELDS.get(cls)
    if fields is None:
        defaults = cls()
        fields = _TEXT_FIELDS[cls] = tuple(
            name for name in cls._FIELDS
            if not isinstance(getattr(defaults, name), _NO_STRINGS))
    return fields


def _scan(message: WireStruct, fields: tuple[str, ...]) -> tuple[str, int] | None:
    """(dotted field path, UTF-8 size) of the first string over the limit among `fields`
    of `message`, in spec order."""
    for name in fields:
        # A by-name walk over `_FIELDS`: the check covers every generated message type.
        value = getattr(message, name)
        kind = type(value)
        if kind is str:
            if len(value) > _ALWAYS_FITS:
                size = _oversized_size(value)
                if size:
                    return name, size
        elif kind is list:
            if value:
                found = _scan_array(value)
                if found is not None:
                    return (f"{name}.{found[0]}" if found[0] else name), found[1]
        elif isinstance(value, WireStruct):
            found = _scan(value, _text_fields(kind))
            if found is not None:
                return f"{name}.{found[0]}", found[1]
    return None


def _scan_array(items: list[object]) -> tuple[str, int] | None:
    """Like `_scan` over an array of one element type: the path inside the element ("" for
    a string element itself)."""
    first = items[0]
    if type(first) is str:
        for item in items:
            if len(item) > _ALWAYS_FITS:  # type: ignore[arg-type]
                size = _oversized_size(item)  # type: ignore[arg-type]
                if size:
                    return "", size
    elif isinstance(first, WireStruct):
        fields = _text_fields(type(first))
        if fields:
            for item in items:
                found = _scan(item, fields)  # type: ignore[arg-type]
                if found is not None:
                    return found
    # Arrays of ints and uuids have no length limit.
    return None
