"""Unknown tagged fields are skipped silently; known ones are read by tag, in any version.

Kafka adds tagged fields to existing versions without bumping them, so a newer client may
send tags this codec has never heard of. They must never be an error.
"""

from __future__ import annotations

import pytest
from wire_strategies import Case, message_versions

from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from groupcoord.wire.generated.fetch import FetchRequest
from groupcoord.wire.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.wire.primitives import uvarint_bytes

FLEXIBLE = [(c, v) for c, v in message_versions()
            if c.spec.flexible.lo <= v <= c.spec.flexible.hi]

UNKNOWN = uvarint_bytes(20000) + b"\x03" + b"\xaa\xbb\xcc"  # tag 20000, 3 bytes


@pytest.mark.parametrize(("case", "version"), FLEXIBLE,
                         ids=[f"{c.id}-v{v}" for c, v in FLEXIBLE])
def test_unknown_tag_in_top_level_struct_is_skipped(case: Case, version: int) -> None:
    obj = case.cls()
    data = obj.encode(version)
    # A default instance ends with an empty tagged-fields section: a single zero byte.
    assert data[-1:] == b"\x00"
    mutated = data[:-1] + b"\x01" + UNKNOWN
    decoded, end = case.cls.decode(mutated, 0, version)
    assert end == len(mutated)
    assert decoded == obj


def test_unknown_tags_in_nested_structs_and_between_known_tags() -> None:
    protocol = JoinGroupRequestProtocol(name="range", metadata=b"m")
    request = JoinGroupRequest(group_id="g", member_id="m", protocol_type="consumer",
                               protocols=[protocol, protocol])
    plain = request.encode(9)
    nested = protocol.encode(9)
    assert nested[-1:] == b"\x00"
    with_tags = nested[:-1] + b"\x02" + UNKNOWN + b"\x07\x00"
    mutated = plain.replace(nested, with_tags)
    assert mutated != plain
    assert JoinGroupRequest.decode(mutated, 0, 9) == (request, len(mutated))


def test_known_tag_read_alongside_unknown_ones() -> None:
    request = FetchRequest(cluster_id="cluster", replica_id=-1, max_wait_ms=500)
    plain = FetchRequest(replica_id=-1, max_wait_ms=500).encode(15)
    tagged = request.encode(15)
    entry = tagged[len(plain) - 1:]  # count 1, then the tag 0 entry
    assert entry[:2] == b"\x01\x00"
    mutated = plain[:-1] + b"\x03" + UNKNOWN + entry[1:] + b"\x09\x00"
    decoded, end = FetchRequest.decode(mutated, 0, 15)
    assert end == len(mutated)
    assert decoded == request
    assert decoded.cluster_id == "cluster"


def test_known_tagged_field_default_not_written() -> None:
    assert FetchRequest(cluster_id=None).encode(12) == FetchRequest().encode(12)
    assert FetchRequest(cluster_id="c").encode(12) != FetchRequest().encode(12)
    # The same field does not exist before v12 and is dropped there.
    assert FetchRequest(cluster_id="c").encode(11) == FetchRequest().encode(11)


def test_nullable_struct_marker() -> None:
    response = ConsumerGroupHeartbeatResponse(member_id="m", assignment=None)
    data = response.encode(0)
    assert ConsumerGroupHeartbeatResponse.decode(data, 0, 0)[0].assignment is None
    assigned = ConsumerGroupHeartbeatResponse(
        member_id="m", assignment=ConsumerGroupHeartbeatResponse.Assignment())
    data2 = assigned.encode(0)
    # Kafka writes an int8 marker before a nullable struct: -1 for null, 1 for present.
    assert len(data2) == len(data) + 2
    assert ConsumerGroupHeartbeatResponse.decode(data2, 0, 0)[0] == assigned
