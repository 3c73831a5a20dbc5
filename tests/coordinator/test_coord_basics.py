"""Partitioning, ids, the classic state table and the group data helpers
(ClassicGroupTest: transitions, selectProtocol, supportsProtocols, initNextGeneration,
replaceGroupInstance, electNewJoinedLeader)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from groupcoord.coordinator.classic.consumer_protocol import (
    decode_assignment,
    encode_assignment,
    encode_subscription,
    subscription_topics,
)
from groupcoord.coordinator.classic.group import ClassicGroup, ClassicGroupMember
from groupcoord.coordinator.classic.state import (
    ClassicGroupState,
    IllegalStateTransition,
    check_transition,
)
from groupcoord.coordinator.consumer.heartbeat import new_member_id
from groupcoord.coordinator.ids import RandomIds, SequentialIds, format_uuid4
from groupcoord.coordinator.partitioning import java_string_hash, partition_for
from groupcoord.wire.kafka_uuid import uuid_text

S = ClassicGroupState


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("abc") == 96354
    assert java_string_hash("hello") == 99162322
    # Famous Integer.MIN_VALUE hash: Utils.abs maps it to 0.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants") == 0
    # Non-BMP characters hash as two UTF-16 code units.
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00


def test_partition_for_is_in_range() -> None:
    for gid in ("g", "my-group", "console-consumer-1234", "ü"):
        assert 0 <= partition_for(gid) < 50
    assert partition_for("abc", 7) == 96354 % 7


def test_id_sources() -> None:
    seq = SequentialIds()
    assert seq.member_id("client") == "client-1"
    assert seq.member_id("inst") == "inst-2"
    rnd = RandomIds(lambda n: bytes(range(n)))
    mid = rnd.member_id("c")
    assert mid.startswith("c-") and len(mid) == 2 + 36
    u = format_uuid4(bytes(16))
    assert u == "00000000-0000-4000-8000-000000000000"
    assert seq.uuid() == "3"


def test_consumer_group_member_ids_are_kafka_uuids() -> None:
    """A consumer-group member whose client sent no id (ConsumerGroupHeartbeat v0, a classic
    JoinGroup into a consumer group) gets `Uuid.randomUuid().toString()`: 22 characters of
    base64, never one with a "-", not the classic `prefix-UUID` form."""
    draws = iter([b"\xf8" + bytes(15), bytes(range(16))])
    mgr = SimpleNamespace(ids=RandomIds(lambda n: next(draws)))
    member_id = new_member_id(mgr)
    assert len(member_id) == 22 and "-" not in member_id
    assert member_id == uuid_text(bytes(range(6)) + b"\x46\x07\x88" + bytes(range(9, 16)))


@pytest.mark.parametrize("current,target", [
    (S.STABLE, S.PREPARING_REBALANCE),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.PREPARING_REBALANCE, S.EMPTY),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.STABLE, S.DEAD),
    (S.DEAD, S.DEAD),
])
def test_valid_transitions(current: ClassicGroupState, target: ClassicGroupState) -> None:
    check_transition(current, target)


@pytest.mark.parametrize("current,target", [
    (S.EMPTY, S.STABLE),
    (S.DEAD, S.PREPARING_REBALANCE),
    (S.STABLE, S.COMPLETING_REBALANCE),
    (S.EMPTY, S.COMPLETING_REBALANCE),
    (S.STABLE, S.EMPTY),
])
def test_illegal_transitions(current: ClassicGroupState, target: ClassicGroupState) -> None:
    with pytest.raises(IllegalStateTransition):
        check_transition(current, target)


def member(mid: str, protocols: list[str], instance: str | None = None) -> ClassicGroupMember:
    return ClassicGroupMember(mid, instance, "c", "h", 1000, 1000, "consumer",
                              [(p, p.encode()) for p in protocols])


def test_select_protocol_and_support() -> None:
    g = ClassicGroup("g")
    assert g.supports_protocols("consumer", ["range"])
    assert not g.supports_protocols("", ["range"])
    assert not g.supports_protocols("consumer", [])
    g.add(member("a", ["range", "roundrobin"]))
    g.add(member("b", ["roundrobin", "range"]))
    g.add(member("c", ["roundrobin"]))
    g.transition_to(S.PREPARING_REBALANCE, 0)
    # Only roundrobin is supported by every member.
    assert g.select_protocol() == "roundrobin"
    assert g.supports_protocols("consumer", ["roundrobin", "x"])
    assert not g.supports_protocols("consumer", ["range"])
    assert not g.supports_protocols("other", ["roundrobin"])


def test_select_protocol_majority_vote() -> None:
    g = ClassicGroup("g")
    g.add(member("a", ["range", "roundrobin"]))
    g.add(member("b", ["roundrobin", "range"]))
    g.add(member("c", ["roundrobin", "range"]))
    assert g.select_protocol() == "roundrobin"


def test_init_next_generation() -> None:
    g = ClassicGroup("g")
    g.add(member("a", ["range"]))
    a = g.members["a"]
    a.join_token = 1
    g.transition_to(S.PREPARING_REBALANCE, 5)
    g.init_next_generation(7)
    assert (g.generation_id, g.state, g.protocol_name, g.state_timestamp_ms) == (
        1, S.COMPLETING_REBALANCE, "range", 7)
    g.remove("a")
    g.transition_to(S.PREPARING_REBALANCE, 8)
    g.init_next_generation(9)
    assert (g.generation_id, g.state, g.protocol_name) == (2, S.EMPTY, None)


def test_replace_group_instance_and_leader() -> None:
    g = ClassicGroup("g")
    g.add(member("a", ["range"], "i1"))
    g.add(member("b", ["range"]))
    g.members["a"].assignment = b"x"
    old, new = g.replace_static_member("i1", "a", "a2")
    assert old.member_id == "a" and new.member_id == "a2"
    assert g.leader_id == "a2" and g.static_members == {"i1": "a2"}
    assert new.assignment == b"x"


def test_elect_new_joined_leader() -> None:
    g = ClassicGroup("g")
    g.add(member("a", ["range"]))
    g.add(member("b", ["range"]))
    assert not g.elect_joined_leader()
    g.members["b"].join_token = 3
    assert g.elect_joined_leader() and g.leader_id == "b"
    g.remove("b")
    assert g.leader_id == "a"


def test_consumer_protocol_round_trip() -> None:
    sub = encode_subscription(["t1", "t2"], version=1)
    assert subscription_topics(sub) == ["t1", "t2"]
    data = encode_assignment({"t1": [0, 2], "t2": [1]})
    assert decode_assignment(data) == {"t1": [0, 2], "t2": [1]}
    assert decode_assignment(b"") == {}
