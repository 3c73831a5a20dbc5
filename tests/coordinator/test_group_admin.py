"""DescribeGroups, ListGroups and DeleteGroups on a shard (testDescribeGroupStable,
testDescribeGroupRebalancing, testDescribeGroups*GroupIdNotFound*, testListGroups,
testClassicGroupDelete, ClassicGroupTest.testValidateDeleteGroup)."""

from __future__ import annotations

from coord_harness import GROUP, Harness

from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.wire.errors import ErrorCode as E

S = ClassicGroupState


def test_describe_stable_group() -> None:
    h = Harness()
    ids = h.stable_group(2)
    d = h.shard.describe_group(GROUP, 5).response
    assert (d.error_code, d.group_state, d.protocol_type, d.protocol_data) == (
        0, "Stable", "consumer", "range")
    assert [m.member_id for m in d.members] == ids
    assert d.members[0].member_metadata != b""
    assert d.members[0].member_assignment == f"a-{ids[0]}".encode()
    assert d.members[0].client_host == "/127.0.0.1" and d.members[0].client_id == "c0"


def test_describe_rebalancing_group_hides_metadata() -> None:
    h = Harness()
    ids = h.stable_group(2)
    h.join(member_id=ids[0])
    d = h.shard.describe_group(GROUP, 5).response
    assert d.group_state == "PreparingRebalance" and d.protocol_data == ""
    assert all(m.member_metadata == b"" for m in d.members)
    assert d.members[1].member_assignment == f"a-{ids[1]}".encode()


def test_describe_unknown_group() -> None:
    h = Harness()
    d = h.shard.describe_group("nope", 6).response
    assert (d.error_code, d.group_state, d.error_message) == (
        E.GROUP_ID_NOT_FOUND, "Dead", "Group nope not found.")
    d = h.shard.describe_group("nope", 5).response
    assert (d.error_code, d.group_state) == (0, "Dead")


def test_list_groups_with_filters() -> None:
    h = Harness()
    h.stable_group(1)
    h.commit({("t", 0): 1}, group_id="simple")
    h.join(version=3, group_id="rebalancing", protocol_type="connect")
    listed = {g.group_id: (g.protocol_type, g.group_state, g.group_type)
              for g in h.shard.list_groups().response}
    assert listed == {
        GROUP: ("consumer", "Stable", "classic"),
        "simple": ("", "Empty", "classic"),
        "rebalancing": ("connect", "PreparingRebalance", "classic"),
    }
    assert [g.group_id for g in h.shard.list_groups([" STABLE ", "empty"]).response] == [
        GROUP, "simple"]
    assert len(h.shard.list_groups(None, ["Classic"]).response) == 3
    assert h.shard.list_groups(None, ["consumer"]).response == []
    assert h.shard.list_groups(None, ["bogus"]).response == []


def test_delete_groups() -> None:
    h = Harness()
    ids = h.stable_group(1)
    h.commit({("t", 0): 1}, group_id="simple")
    h.commit({("u", 0): 1}, group_id="simple")
    r = h.apply(h.shard.delete_groups([GROUP, "simple", "nope"], h.now))
    assert [(x.group_id, x.error_code) for x in r.response] == [
        (GROUP, E.NON_EMPTY_GROUP), ("simple", 0), ("nope", E.GROUP_ID_NOT_FOUND)]
    kinds = [(type(x.key).__name__, x.value) for x in r.records]
    assert kinds == [("OffsetCommitKey", None), ("OffsetCommitKey", None),
                     ("GroupMetadataKey", None)]
    assert h.shard.classic.get("simple") is None
    h.leave([(ids[0], None)])
    r = h.apply(h.shard.delete_groups([GROUP], h.now))
    assert r.response[0].error_code == 0 and h.shard.classic.get(GROUP) is None
    assert h.fresh_replay().snapshot() == h.shard.snapshot() == {"groups": {}, "offsets": {}}
