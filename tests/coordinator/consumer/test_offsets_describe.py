"""Offsets, describe and list for consumer groups (testConsumerGroupOffsetCommitWithStaleMemberEpoch,
testConsumerGroupOffsetCommitFromAdminClient, testConsumerGroupOffsetFetchWithStaleMemberEpoch,
testConsumerGroupDescribeNoErrors, testListGroups, testConsumerGroupMaybeDelete)."""

from __future__ import annotations

from cg_harness import GROUP, CgHarness, kinds

from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)


def commit(h: CgHarness, member: str, epoch: int, parts: list[int], version: int = 9
           ) -> dict[int, int]:
    resp = h.commit({("foo", p): 10 for p in parts}, member_id=member, generation=epoch,
                    version=version, group_id=GROUP)
    return {p.partition_index: p.error_code for t in resp.topics for p in t.partitions}


def test_commit_member_epoch_checks() -> None:
    h = CgHarness(topics={"foo": 4})
    h.hb("a", 0)
    assert commit(h, "a", 1, [0, 1]) == {0: 0, 1: 0}
    assert commit(h, "a", 2, [0]) == {0: E.STALE_MEMBER_EPOCH}
    assert commit(h, "zz", 1, [0]) == {0: E.UNKNOWN_MEMBER_ID}
    assert commit(h, "", -1, [0]) == {0: E.UNKNOWN_MEMBER_ID}  # admin commit, non-empty group
    assert commit(h, "a", 1, [0], version=8) == {0: E.UNSUPPORTED_VERSION}
    h.hb("b", 0)                              # epoch 2
    r = h.hb("a", 1, owned={"foo": [0, 1, 2, 3]})
    h.hb("a", 1, owned=h.assigned(r))           # a reaches epoch 2, keeps two partitions
    kept = h.assigned(r)["foo"]
    # An older epoch may commit partitions still assigned at that epoch (KIP-1251) ...
    assert commit(h, "a", 1, kept) == dict.fromkeys(kept, 0)
    lost = sorted(set(range(4)) - set(kept))
    # ... but not those it gave up.
    assert commit(h, "a", 1, lost) == dict.fromkeys(lost, E.STALE_MEMBER_EPOCH)


def test_commit_to_empty_consumer_group_by_admin() -> None:
    h = CgHarness(topics={"foo": 1})
    h.hb("a", 0)
    h.hb("a", -1)
    assert commit(h, "", -1, [0]) == {0: 0}


def test_fetch_member_epoch_checks() -> None:
    h = CgHarness(topics={"foo": 1})
    h.hb("a", 0)

    def fetch(member: str | None, epoch: int) -> int:
        req = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
            group_id=GROUP, member_id=member, member_epoch=epoch,
            topics=[OffsetFetchRequestTopics(name="foo", partition_indexes=[0])])])
        _, result = h.call("offset_fetch", req, 9)
        return result.response.groups[0].error_code
    assert fetch("a", 1) == 0
    assert fetch("a", 2) == E.STALE_MEMBER_EPOCH
    assert fetch("b", 1) == E.UNKNOWN_MEMBER_ID
    assert fetch(None, -1) == 0


def test_describe_shows_epochs_target_and_current() -> None:
    h = CgHarness(topics={"foo": 4})
    h.hb("a", 0, client_id="ca")
    h.hb("b", 0, client_id="cb")
    g = h.shard.consumer_group_describe(GROUP).response
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch) == \
        (0, "Reconciling", 2, 2)
    assert g.assignor_name == "uniform"
    a = next(m for m in g.members if m.member_id == "a")
    assert a.member_epoch == 1 and a.member_type == 1 and a.client_id == "ca"
    assert [p for tp in a.assignment.topic_partitions for p in tp.partitions] == [0, 1, 2, 3]
    assert a.assignment.topic_partitions[0].topic_name == "foo"
    assert len([p for tp in a.target_assignment.topic_partitions for p in tp.partitions]) == 2
    missing = h.shard.consumer_group_describe("nope").response
    assert missing.error_code == E.GROUP_ID_NOT_FOUND


def test_list_groups_type_and_state_filters() -> None:
    h = CgHarness(topics={"foo": 1})
    h.hb("a", 0)
    h.stable_group(1)
    listed = h.shard.list_groups().response
    assert [(g.group_id, g.group_type, g.protocol_type) for g in listed] == [
        (GROUP, "consumer", "consumer"), ("grp", "classic", "consumer")]
    assert [g.group_id for g in h.shard.list_groups(types=["Consumer"]).response] == [GROUP]
    assert [g.group_id for g in h.shard.list_groups(states=["stable"], types=["consumer"]
                                                    ).response] == [GROUP]
    assert h.shard.list_groups(states=["assigning"], types=["consumer"]).response == []


def test_delete_consumer_group() -> None:
    h = CgHarness(topics={"foo": 1})
    h.hb("a", 0)
    commit(h, "a", 1, [0])
    r = h.apply(h.shard.delete_groups([GROUP], h.now))
    assert r.response[0].error_code == E.NON_EMPTY_GROUP
    h.hb("a", -1)
    r = h.apply(h.shard.delete_groups([GROUP], h.now))
    assert r.response[0].error_code == 0
    assert kinds(r.records) == ["Offset-", "TargetMeta-", "GroupMeta-"]
    assert GROUP not in h.shard.consumer.groups
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_offsets_of_unsubscribed_topics_expire_and_empty_group_is_deleted() -> None:
    h = CgHarness(topics={"foo": 1, "bar": 1})
    h.hb("a", 0)
    h.commit({("foo", 0): 1, ("bar", 0): 2}, member_id="a", generation=1, group_id=GROUP)
    later = h.now + h.config.offsets_retention_ms   # the sweep runs at a later time
    r = h.apply(h.shard.cleanup_expired_offsets(later))
    assert kinds(r.records) == ["Offset-"] and r.records[0].key.topic == "bar"
    h.hb("a", -1)
    r = h.apply(h.shard.cleanup_expired_offsets(later))
    assert kinds(r.records) == ["Offset-", "TargetMeta-", "GroupMeta-"]
    assert GROUP not in h.shard.consumer.groups
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


def test_on_loaded_rederives_timers() -> None:
    h = CgHarness(topics={"foo": 2})
    h.hb("a", 0, rebalance_ms=9_000)
    h.hb("b", 0)
    h.hb("a", 1, owned={"foo": [0, 1]})   # a is revoking
    shard = h.fresh_replay()
    result = shard.on_loaded(h.now)
    keys = {t.key: t.deadline_ms for t in result.timers}
    assert keys[("consumer-session", GROUP, "a")] == h.now + 45_000
    assert keys[("consumer-session", GROUP, "b")] == h.now + 45_000
    assert keys[("consumer-rebalance", GROUP, "a")] == h.now + 9_000
    assert ("consumer-rebalance", GROUP, "b") not in keys
