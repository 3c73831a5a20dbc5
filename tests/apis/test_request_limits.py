"""`apis.request_limits`: the string fields of every coordinator request against what the
coordinator's records can hold (32,767 bytes of UTF-8), with INVALID_GROUP_ID for group ids
and INVALID_REQUEST for the rest; and the whole-request error responses of the APIs whose
response has no top-level error code in every version."""

from __future__ import annotations

import pytest
from helpers.hostile_requests import OVERSIZED, HostileCase, cases

from groupcoord.apis import add_partitions_to_txn, find_coordinator, incremental_alter_configs
from groupcoord.apis.request_limits import MAX_STRING_BYTES, check_request
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated import add_partitions_to_txn as apt_wire
from groupcoord.wire.generated import incremental_alter_configs as iac_wire
from groupcoord.wire.generated.heartbeat import HeartbeatRequest
from groupcoord.wire.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol


def _as_received(request: object, version: int) -> tuple[object, int]:
    """The request as the dispatcher holds it: decoded from its own encoding, and the
    size of that encoding."""
    cls = type(request)
    data = request.encode(version)  # type: ignore[attr-defined]
    decoded, end = cls.decode(data, 0, version)  # type: ignore[attr-defined]
    assert end == len(data)
    return decoded, len(data)


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_oversized_field_is_refused_with_kafkas_code(case: HostileCase) -> None:
    request, size = _as_received(case.build(OVERSIZED), case.version)
    rejection = check_request(request, size)  # type: ignore[arg-type]
    assert rejection is not None
    assert (rejection.field, rejection.code, rejection.size) == (case.field, case.code, 40_000)


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_longest_legal_field_is_accepted(case: HostileCase) -> None:
    request, size = _as_received(case.build("x" * MAX_STRING_BYTES), case.version)
    assert size > MAX_STRING_BYTES  # the walk really ran
    assert check_request(request, size) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "refused"), [
    ("x" * 32_767, False),
    ("x" * 32_768, True),
    ("\u20ac" * 10_922, False),        # 3 bytes each: 32,766
    ("\u20ac" * 10_923, True),         # 32,769
    ("\U0001F600" * 8_191, False),     # 4 bytes each: 32,764
    ("\U0001F600" * 8_192, True),      # 32,768
    ("a" * 32_766 + "\u00e9", True),   # 32,768: the byte count decides, not the length
])
def test_limit_counts_utf8_bytes(text: str, refused: bool) -> None:
    request = HeartbeatRequest(group_id="g", generation_id=1, member_id=text)
    rejection = check_request(request, 1 << 20)
    assert (rejection is not None) == refused
    if rejection is not None:
        assert rejection.code == E.INVALID_REQUEST
        assert rejection.size == len(text.encode())


def test_small_frames_skip_the_walk() -> None:
    # A field is never longer than its frame: a small frame cannot hold an oversized one.
    request = HeartbeatRequest(group_id=OVERSIZED, generation_id=1, member_id="m")
    assert check_request(request, MAX_STRING_BYTES) is None
    assert check_request(request, MAX_STRING_BYTES + 1) is not None


def test_first_oversized_field_in_spec_order_decides() -> None:
    request = JoinGroupRequest(group_id="g", member_id=OVERSIZED, protocol_type="consumer",
                               protocols=[JoinGroupRequestProtocol(name="r", metadata=b"")],
                               reason=OVERSIZED)
    rejection = check_request(request, 1 << 20)
    assert rejection is not None and rejection.field == "member_id"


def test_bytes_fields_have_no_string_limit() -> None:
    # Metadata is BYTES (int32 length in every record version): only its frame bounds it.
    request = JoinGroupRequest(group_id="g", protocol_type="consumer", protocols=[
        JoinGroupRequestProtocol(name="r", metadata=b"\x00" * 100_000)])
    assert check_request(request, 1 << 20) is None


def test_find_coordinator_error_goes_to_every_key_from_v4() -> None:
    request = find_coordinator.FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"])
    response = find_coordinator.error_response(request, 4, int(E.INVALID_REQUEST))
    assert [(c.key, c.error_code, c.node_id) for c in response.coordinators] == [
        ("a", E.INVALID_REQUEST, -1), ("b", E.INVALID_REQUEST, -1)]
    old = find_coordinator.error_response(request, 3, int(E.INVALID_REQUEST))
    assert (old.error_code, old.node_id) == (E.INVALID_REQUEST, -1)


def test_add_partitions_error_goes_to_every_partition_before_v4() -> None:
    m = add_partitions_to_txn
    request = apt_wire.AddPartitionsToTxnRequest(v3_and_below_topics=[
        apt_wire.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])])
    response = m.error_response(request, 3, int(E.INVALID_REQUEST))
    assert [(t.name, [(p.partition_index, p.partition_error_code)
                      for p in t.results_by_partition])
            for t in response.results_by_topic_v3_and_below] == [
        ("t", [(0, E.INVALID_REQUEST), (1, E.INVALID_REQUEST)])]
    assert m.error_response(request, 4, int(E.INVALID_REQUEST)).error_code == E.INVALID_REQUEST


def test_incremental_alter_configs_error_goes_to_every_resource() -> None:
    request = iac_wire.IncrementalAlterConfigsRequest(resources=[
        iac_wire.AlterConfigsResource(resource_type=32, resource_name="g", configs=[]),
        iac_wire.AlterConfigsResource(resource_type=2, resource_name="t", configs=[])])
    response = incremental_alter_configs.error_response(request, 1, int(E.INVALID_REQUEST))
    assert [(r.resource_type, r.resource_name, r.error_code) for r in response.responses] == [
        (32, "g", E.INVALID_REQUEST), (2, "t", E.INVALID_REQUEST)]


def test_every_served_request_class_can_be_walked() -> None:
    # The walk learns each class's string-bearing fields from its default instance.
    from groupcoord.apis.registry import handlers

    for spec in handlers().values():
        assert check_request(spec.request_cls(), 1 << 20) is None
