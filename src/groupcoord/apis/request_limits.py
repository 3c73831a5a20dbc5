"""Request field limits: every string a request carries must fit the coordinator's records.

Checked by the dispatcher on every decoded request, before its handler runs, so an
oversized field never reaches a coordinator shard (issue 10: a 40,000-byte group id made
`encode_key` fail inside the shard, which then reloaded on every such request).

What the log format can hold (`../shared/kafka-spec/records`, `share-records`, and the
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
cannot accept (`GroupMetadataManager.throwIfEmptyString`, `KafkaApis` for DescribeGroups /
DeleteGroups); INVALID_REQUEST (42, Kafka's `InvalidRequestException`) for every other
field (member and instance ids, protocol names, topic names, transactional ids, metadata
strings, config names and values). An API whose response cannot carry an error closes the
connection, which is exactly Kafka's answer.

Cost: no field can be longer than the frame holding it, so a frame of at most 32,767
bytes (every heartbeat) is accepted after one comparison; only larger frames are walked.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.wire.errors import ErrorCode
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


@dataclass(frozen=True, slots=True)
class FieldRejection:
    """Why a request is refused before its handler: the field path and the error code."""

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
    found = _first_oversized(request)
    if found is None:
        return None
    path, size = found
    leaf = path.rsplit(".", 1)[-1]
    code = ErrorCode.INVALID_GROUP_ID if leaf in GROUP_ID_FIELDS else ErrorCode.INVALID_REQUEST
    return FieldRejection(path, int(code), size)


def _oversized_size(text: str) -> int:
    """The UTF-8 size of `text` when it exceeds MAX_STRING_BYTES, else 0."""
    if len(text) <= _ALWAYS_FITS:
        return 0
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > MAX_STRING_BYTES else 0


def _first_oversized(message: WireStruct) -> tuple[str, int] | None:
    """(dotted field path, UTF-8 size) of the first string over the limit, in spec order."""
    for name in message._FIELDS:
        value = getattr(message, name)
        kind = type(value)
        if kind is str:
            size = _oversized_size(value)
            if size:
                return name, size
        elif kind is list:
            found = _first_oversized_item(value)
            if found is not None:
                return (name if found[0] == "" else f"{name}.{found[0]}"), found[1]
        elif isinstance(value, WireStruct):
            found = _first_oversized(value)
            if found is not None:
                return f"{name}.{found[0]}", found[1]
    return None


def _first_oversized_item(items: list[object]) -> tuple[str, int] | None:
    """Like `_first_oversized` over an array: the path inside an element ("" for a
    string element itself)."""
    for item in items:
        if type(item) is str:
            size = _oversized_size(item)
            if size:
                return "", size
        elif isinstance(item, WireStruct):
            found = _first_oversized(item)
            if found is not None:
                return found
        else:
            # Arrays hold one element type; ints, bytes and uuids have no length limit.
            return None
    return None
