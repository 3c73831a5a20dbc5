"""OffsetCommit, OffsetFetch, OffsetDelete and retention for classic and simple groups
(OffsetMetadataManagerTest themes, ClassicGroupTest.testValidateOffsetCommit /
testOffsetExpirationCondition)."""

from __future__ import annotations

from coord_harness import GROUP, Harness

from groupcoord.coordinator.classic.consumer_protocol import encode_subscription
from groupcoord.coordinator.classic.state import ClassicGroupState
from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)

S = ClassicGroupState
RETENTION = GroupCoordinatorConfig().offsets_retention_ms


def group(h: Harness):
    return h.shard.classic.get(GROUP)


def test_commit_to_unknown_group_with_generation() -> None:
    h = Harness()
    assert h.commit_errors({("t", 0): 1}, "m", 1, version=8) == {("t", 0): E.ILLEGAL_GENERATION}
    assert h.commit_errors({("t", 0): 1}, "m", 1, version=9) == {("t", 0): E.GROUP_ID_NOT_FOUND}
    assert h.log == []


def test_simple_group_commit_creates_group() -> None:
    h = Harness()
    assert h.commit_errors({("t", 0): 5, ("t", 1): 7}) == {("t", 0): 0, ("t", 1): 0}
    g = group(h)
    assert g is not None and g.state is S.EMPTY and g.protocol_type is None
    assert [r.key.partition for r in h.log] == [0, 1]
    value = h.log[0].value
    assert (value.offset, value.leader_epoch, value.metadata, value.commit_timestamp,
            value.expire_timestamp) == (5, -1, "", h.now, -1)
    assert h.fetch({"t": [0, 1, 2]}) == {("t", 0): (5, 0), ("t", 1): (7, 0), ("t", 2): (-1, 0)}
    # A member id with generation -1 on an empty group is accepted too.
    assert h.commit_errors({("t", 0): 6}, member_id="someone") == {("t", 0): 0}


def test_commit_value_versions() -> None:
    h = Harness()
    h.commit({("t", 0): 1}, version=2, retention_ms=1_000)
    rec = h.log[-1]
    assert rec.value_version == 1 and rec.value.expire_timestamp == h.now + 1_000
    h.commit({("t", 0): 2}, version=5)
    assert h.log[-1].value_version == 4 and h.log[-1].value.expire_timestamp == -1


def test_metadata_too_large_fails_only_that_partition() -> None:
    h = Harness(GroupCoordinatorConfig(offset_metadata_max_bytes=4))
    h.commit({("t", 0): 1}, metadata="abcd")
    errs = h.commit_errors({("t", 0): 1, ("t", 1): 2}, metadata="abcde")
    assert errs == {("t", 0): E.OFFSET_METADATA_TOO_LARGE, ("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    assert len(h.log) == 1


def test_classic_member_commit_validation() -> None:
    h = Harness()
    ids = h.stable_group(2)
    ok = {("t", 0): 0}
    assert h.commit_errors({("t", 0): 3}, ids[0], 1) == ok
    assert h.commit_errors({("t", 0): 3}, ids[0], 2) == {("t", 0): E.ILLEGAL_GENERATION}
    assert h.commit_errors({("t", 0): 3}, "ghost", 1) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    # No member and no generation on a non-empty group.
    assert h.commit_errors({("t", 0): 3}) == {("t", 0): E.UNKNOWN_MEMBER_ID}


def test_commit_in_completing_rebalance() -> None:
    h = Harness()
    t, _ = h.join(version=3)
    h.advance(3_000)
    mid = h.reply(t).member_id
    errs = h.commit_errors({("t", 0): 3}, mid, 1)
    assert errs == {("t", 0): E.REBALANCE_IN_PROGRESS}


def test_commit_in_preparing_rebalance_allowed_and_refreshes_session() -> None:
    h = Harness()
    ids = h.stable_group(2)
    h.join(member_id=ids[0])  # PreparingRebalance, generation 1 still current
    h.advance(9_000)
    assert h.commit_errors({("t", 0): 3}, ids[1], 1) == {("t", 0): 0}
    assert h.timers[("heartbeat", GROUP, ids[1])] == h.now + 10_000


def test_commit_with_fenced_instance_id() -> None:
    h = Harness()
    t, _ = h.join(version=5, instance_id="i0")
    h.advance(3_000)
    mid = h.reply(t).member_id
    h.sync(mid, 1, {mid: b""}, instance_id="i0")
    errs = h.commit_errors({("t", 0): 1}, "other", 1, instance_id="i0")
    assert errs == {("t", 0): E.FENCED_INSTANCE_ID}
    assert h.commit_errors({("t", 0): 1}, mid, 1, instance_id="i0") == {("t", 0): 0}


def test_fetch_unknown_group_and_fetch_all() -> None:
    h = Harness()
    assert h.fetch({"t": [0]}) == {("t", 0): (-1, 0)}
    assert h.fetch(None) == {}
    h.commit({("b", 1): 4, ("a", 0): 3})
    assert list(h.fetch(None)) == [("a", 0), ("b", 1)]


def test_fetch_v8_multiple_groups_and_v1_shape() -> None:
    h = Harness()
    h.commit({("t", 0): 9})
    req = OffsetFetchRequest(require_stable=True, groups=[
        OffsetFetchRequestGroup(group_id=GROUP, topics=None),
        OffsetFetchRequestGroup(group_id="other", topics=[
            OffsetFetchRequestTopics(name="t", partition_indexes=[0])])])
    _, r = h.call("offset_fetch", req, 8)
    g1, g2 = r.response.groups
    assert g1.topics[0].partitions[0].committed_offset == 9
    assert g2.topics[0].partitions[0].committed_offset == -1
    assert h.fetch({"t": [0]}, version=1) == {("t", 0): (9, 0)}


def test_fetch_with_recreated_topic() -> None:
    h = Harness()
    old_id, new_id = b"\x01" * 16, b"\x02" * 16
    from groupcoord.wire.generated.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )
    req = OffsetCommitRequest(group_id=GROUP, topics=[OffsetCommitRequestTopic(
        name="t", topic_id=old_id,
        partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=5)])])
    h.call("offset_commit", req, 10)
    assert h.log[-1].value.topic_id == old_id
    fetch = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=GROUP, topics=[
        OffsetFetchRequestTopics(name="t", topic_id=new_id, partition_indexes=[0])])])
    _, r = h.call("offset_fetch", fetch, 10)
    assert r.response.groups[0].topics[0].partitions[0].committed_offset == -1
    fetch.groups[0].topics[0].topic_id = old_id
    _, r = h.call("offset_fetch", fetch, 10)
    assert r.response.groups[0].topics[0].partitions[0].committed_offset == 5


def _delete(h: Harness, topics: dict[str, list[int]]):
    req = OffsetDeleteRequest(group_id=GROUP, topics=[
        OffsetDeleteRequestTopic(name=t, partitions=[
            OffsetDeleteRequestPartition(partition_index=p) for p in ps])
        for t, ps in topics.items()])
    _, r = h.call("offset_delete", req, 0)
    return r


def test_offset_delete_errors_and_tombstones() -> None:
    h = Harness()
    assert _delete(h, {"t": [0]}).response.error_code == E.GROUP_ID_NOT_FOUND
    h.commit({("t", 0): 1, ("u", 0): 2})
    r = _delete(h, {"t": [0, 1]})
    assert r.response.error_code == 0
    assert [(p.partition_index, p.error_code) for p in r.response.topics[0].partitions] == [
        (0, 0), (1, 0)]
    assert len(r.records) == 1 and r.records[0].value is None
    assert h.fetch({"t": [0]}) == {("t", 0): (-1, 0)}


def test_offset_delete_subscribed_topic_of_consumer_group() -> None:
    h = Harness()
    ids = h.stable_group(1)
    h.commit({("t", 0): 1, ("u", 0): 2}, ids[0], 1)
    r = _delete(h, {"t": [0], "u": [0]})
    errs = {t.name: [p.error_code for p in t.partitions] for t in r.response.topics}
    assert errs == {"t": [E.GROUP_SUBSCRIBED_TO_TOPIC], "u": [0]}


def test_offset_delete_non_consumer_non_empty_group() -> None:
    h = Harness()
    h.join(version=3, protocol_type="connect")
    assert _delete(h, {"t": [0]}).response.error_code == E.NON_EMPTY_GROUP


def test_cleanup_simple_group_by_commit_timestamp() -> None:
    h = Harness()
    h.commit({("t", 0): 1})
    h.advance(1_000)
    h.commit({("t", 1): 1})
    h.advance(RETENTION - 1_000)
    r = h.apply(h.shard.cleanup_expired_offsets(h.now))
    assert [(x.key.partition, x.value) for x in r.records] == [(0, None)]
    h.advance(1_000)
    r = h.apply(h.shard.cleanup_expired_offsets(h.now))
    # The last offset expires and the now offset-less empty group is deleted.
    assert [type(x.key).__name__ for x in r.records] == ["OffsetCommitKey", "GroupMetadataKey"]
    assert group(h) is None
    assert [e.kind for e in r.events] == ["offsets_expired", "group_deleted"]


def test_cleanup_explicit_expire_timestamp() -> None:
    h = Harness()
    h.commit({("t", 0): 1}, version=2, retention_ms=5_000)
    h.advance(4_999)
    assert h.apply(h.shard.cleanup_expired_offsets(h.now)).records == []
    h.advance(1)
    assert len(h.apply(h.shard.cleanup_expired_offsets(h.now)).records) == 2


SHORT = GroupCoordinatorConfig(offsets_retention_minutes=1)


def keep_alive(h: Harness, member_id: str, ms: int) -> None:
    for _ in range(ms // 5_000):
        h.advance(5_000)
        h.heartbeat(member_id, 1)


def test_cleanup_empty_group_uses_state_timestamp() -> None:
    h = Harness(SHORT)
    retention = SHORT.offsets_retention_ms
    ids = h.stable_group(1)
    h.commit({("t", 0): 1}, ids[0], 1)
    keep_alive(h, ids[0], retention)
    # Stable consumer group: subscribed topic "t" never expires.
    assert h.apply(h.shard.cleanup_expired_offsets(h.now)).records == []
    h.leave([(ids[0], None)])
    emptied_at = h.now
    h.advance(retention - 1)
    assert h.apply(h.shard.cleanup_expired_offsets(h.now)).records == []
    h.advance(1)
    assert group(h).state_timestamp_ms == emptied_at
    assert len(h.apply(h.shard.cleanup_expired_offsets(h.now)).records) == 2


def test_cleanup_stable_group_expires_unsubscribed_topics_only() -> None:
    h = Harness(SHORT)
    h.join(version=3, protocols=[("range", encode_subscription(["t"]))])
    h.advance(3_000)
    mid = next(iter(group(h).members))
    h.sync(mid, 1, {mid: b""})
    h.commit({("t", 0): 1, ("old", 0): 1}, mid, 1)
    keep_alive(h, mid, SHORT.offsets_retention_ms)
    r = h.apply(h.shard.cleanup_expired_offsets(h.now))
    assert [(x.key.topic, x.value) for x in r.records] == [("old", None)]


def test_cleanup_rebalancing_group_never_expires() -> None:
    h = Harness()
    ids = h.stable_group(2)
    h.commit({("x", 0): 1}, ids[0], 1)
    h.join(member_id=ids[0])
    h.advance(RETENTION)
    # Group is no longer Stable (members expired) - make sure we do not expire mid-rebalance.
    g = group(h)
    if g.state is S.PREPARING_REBALANCE:
        assert h.apply(h.shard.cleanup_expired_offsets(h.now)).records == []
