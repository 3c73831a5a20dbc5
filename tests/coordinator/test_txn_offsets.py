"""Transactional offsets in the group coordinator: TxnOffsetCommit validation and records,
pending offsets until the COMMIT/ABORT marker, and everything that must see them
(OffsetFetch RequireStable, OffsetDelete, DeleteGroups, expiry, replay from the log).

Kafka tests mirrored: OffsetMetadataManagerTest testFetchOffsetsWithPendingTransactionalOffsets,
testCleanupExpiredOffsetsWithPendingTransactionalOffsets,
testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset, and the
isTransactional cases of ClassicGroupTest / ConsumerGroupTest testValidateOffsetCommit.
"""

from __future__ import annotations

from typing import Any

from coord_harness import GROUP
from txn_harness import TxnHarness, tid

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.records import group_tombstone, offset_commit_record, offset_tombstone
from groupcoord.logformat.batch import parse_header
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)

ZERO = bytes(16)


def fetch(h: TxnHarness, topics: dict[str, list[int]] | None, stable: bool,
          version: int = 7, group_id: str = GROUP) -> dict[tuple[str, int], tuple[int, int]]:
    if version >= 8:
        req = OffsetFetchRequest(require_stable=stable, groups=[OffsetFetchRequestGroup(
            group_id=group_id, member_id=None, member_epoch=-1,
            topics=None if topics is None else [
                OffsetFetchRequestTopics(name=t, partition_indexes=ps)
                for t, ps in topics.items()])])
    else:
        req = OffsetFetchRequest(group_id=group_id, require_stable=stable, topics=None
                                 if topics is None else [
                                     OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                                     for t, ps in topics.items()])
    _, result = h.call("offset_fetch", req, version)
    resp = result.response
    topics_resp = resp.groups[0].topics if version >= 8 else resp.topics
    return {(t.name, p.partition_index): (p.committed_offset, p.error_code)
            for t in topics_resp for p in t.partitions}


def committed(h: TxnHarness, partition: int, topic: str = "t") -> int | None:
    o = h.shard.offsets.get(GROUP, topic, partition)
    return None if o is None else o.offset


def check_replay(h: TxnHarness) -> None:
    assert h.fresh_replay().snapshot() == h.shard.snapshot()


# -- pending until the marker ------------------------------------------------------------

def test_txn_commit_writes_plain_offset_records_and_stays_pending() -> None:
    h = TxnHarness()
    result = h.txn_commit({("t", 0): 5, ("t", 1): 6}, producer_id=7, producer_epoch=2,
                          leader_epoch=3, metadata="m")
    assert [p.error_code for t in result.response.topics for p in t.partitions] == [0, 0]
    assert result.records == [
        offset_commit_record(GROUP, "t", 0, 5, 3, "m", h.now, -1, ZERO),
        offset_commit_record(GROUP, "t", 1, 6, 3, "m", h.now, -1, ZERO)]
    header = parse_header(h.batches[-1])
    assert (header.is_transactional, header.is_control) == (True, False)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 0)
    assert committed(h, 0) is None
    assert h.shard.offsets.has_open_transactions(GROUP)
    # The simple group exists (replay created it), as in Kafka.
    assert h.shard.classic.get(GROUP) is not None
    assert fetch(h, {"t": [0, 1, 2]}, stable=False) == {
        ("t", 0): (-1, 0), ("t", 1): (-1, 0), ("t", 2): (-1, 0)}
    assert fetch(h, {"t": [0, 1, 2]}, stable=True) == {
        ("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT), ("t", 1): (-1, E.UNSTABLE_OFFSET_COMMIT),
        ("t", 2): (-1, 0)}
    check_replay(h)


def test_commit_marker_materializes_and_abort_drops() -> None:
    h = TxnHarness()
    h.txn_commit({("t", 0): 5}, producer_id=1)
    h.txn_commit({("t", 1): 9}, producer_id=2)
    h.marker(1, commit=True)
    h.marker(2, commit=False)
    assert (committed(h, 0), committed(h, 1)) == (5, None)
    assert h.shard.offsets.get(GROUP, "t", 0).record_offset == 0
    assert not h.shard.offsets.has_open_transactions(GROUP)
    assert fetch(h, {"t": [0, 1]}, stable=True) == {("t", 0): (5, 0), ("t", 1): (-1, 0)}
    assert h.shard.snapshot().get("pending") is None
    check_replay(h)


def test_marker_without_pending_offsets_is_a_noop() -> None:
    h = TxnHarness()
    h.commit({("t", 0): 3})
    before = h.shard.snapshot()
    h.marker(42, commit=True)
    h.marker(43, commit=False)
    assert h.shard.snapshot() == before
    check_replay(h)


def test_commit_keeps_the_most_recent_record() -> None:
    """testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset."""
    h = TxnHarness()
    h.txn_commit({("t", 0): 5, ("t", 1): 5}, producer_id=1)   # record offsets 0, 1
    h.commit({("t", 0): 7})                                  # record offset 2: later
    h.marker(1, commit=True)
    assert (committed(h, 0), committed(h, 1)) == (7, 5)
    # A plain commit before the transactional one loses to it.
    h.commit({("t", 2): 1})
    h.txn_commit({("t", 2): 2}, producer_id=1)
    h.marker(1, commit=True)
    assert committed(h, 2) == 2
    check_replay(h)


def test_two_producers_on_one_partition() -> None:
    h = TxnHarness()
    h.txn_commit({("t", 0): 5}, producer_id=1)
    h.txn_commit({("t", 0): 6}, producer_id=2)
    h.marker(2, commit=False)
    assert fetch(h, {"t": [0]}, stable=True) == {("t", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    h.marker(1, commit=True)
    assert fetch(h, {"t": [0]}, stable=True) == {("t", 0): (5, 0)}
    check_replay(h)


def test_open_transaction_at_end_of_log_stays_pending_after_reload() -> None:
    h = TxnHarness()
    h.commit({("t", 0): 1})
    h.txn_commit({("t", 0): 5, ("t", 1): 6}, producer_id=3, producer_epoch=4)
    reloaded = h.fresh_replay()
    assert reloaded.snapshot() == h.shard.snapshot()
    assert reloaded.offsets.has_pending(GROUP, "t", 0)
    assert reloaded.offsets.get(GROUP, "t", 0).offset == 1
    # The marker arrives after the reload.
    reloaded.replay_end_transaction_marker(3, 4, True)
    assert reloaded.offsets.get(GROUP, "t", 0).offset == 5
    assert not reloaded.offsets.has_open_transactions(GROUP)


def test_fetch_all_require_stable_and_v8() -> None:
    h = TxnHarness()
    h.commit({("t", 0): 1, ("t", 1): 2})
    h.txn_commit({("t", 1): 5, ("u", 0): 6}, producer_id=1)
    # Fetch-all lists committed partitions only; a pending one is unstable.
    assert fetch(h, None, stable=True) == {("t", 0): (1, 0),
                                           ("t", 1): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert fetch(h, None, stable=False) == {("t", 0): (1, 0), ("t", 1): (2, 0)}
    assert fetch(h, {"t": [1], "u": [0]}, stable=True, version=8) == {
        ("t", 1): (-1, E.UNSTABLE_OFFSET_COMMIT), ("u", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    # RequireStable does not exist before v7.
    assert fetch(h, {"t": [1]}, stable=True, version=6) == {("t", 1): (2, 0)}


# -- validation ----------------------------------------------------------------------------

def test_unknown_group_and_empty_group_id() -> None:
    h = TxnHarness()
    assert h.txn_errors({("t", 0): 1}, generation=1, member_id="m") == {
        ("t", 0): E.ILLEGAL_GENERATION}
    assert h.txn_errors({("t", 0): 1}, group_id="") == {("t", 0): E.INVALID_GROUP_ID}
    assert h.log == []
    assert h.txn_errors({("t", 0): 1}, version=0) == {("t", 0): 0}


def test_metadata_too_large_fails_that_partition_only() -> None:
    h = TxnHarness(GroupCoordinatorConfig(offset_metadata_max_bytes=3))
    resp = h.txn_commit({("t", 0): 1, ("t", 1): 2}, metadata="long")
    assert [(p.partition_index, p.error_code) for t in resp.response.topics
            for p in t.partitions] == [(0, E.OFFSET_METADATA_TOO_LARGE),
                                       (1, E.OFFSET_METADATA_TOO_LARGE)]
    assert resp.records == []
    assert h.txn_errors({("t", 0): 1}, metadata="abc") == {("t", 0): 0}


def test_v0_and_v1_ignore_the_leader_epoch() -> None:
    h = TxnHarness()
    result = h.txn_commit({("t", 0): 1}, version=1, leader_epoch=9)
    assert result.records[0].value.leader_epoch == -1
    result = h.txn_commit({("t", 0): 1}, version=2, leader_epoch=9)
    assert result.records[0].value.leader_epoch == 9


def test_classic_group_member_checks() -> None:
    h = TxnHarness()
    h.stable_group(2)
    group = h.shard.classic.get(GROUP)
    gen = group.generation_id
    a = group.leader_id
    b = next(m for m in group.members if m != a)
    # No member, no generation: accepted on a non-empty group (OffsetCommit refuses it).
    assert h.txn_errors({("t", 0): 1}) == {("t", 0): 0}
    assert h.commit_errors({("t", 0): 1}) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert h.txn_errors({("t", 0): 1}, member_id="zz", generation=gen) == {
        ("t", 0): E.UNKNOWN_MEMBER_ID}
    assert h.txn_errors({("t", 0): 1}, member_id=a, generation=gen + 1) == {
        ("t", 0): E.ILLEGAL_GENERATION}
    assert h.txn_errors({("t", 0): 1}, member_id=a, generation=gen) == {("t", 0): 0}
    # CompletingRebalance does not refuse transactional commits.
    # The leader's rejoin starts a rebalance; the other member's rejoin completes the join.
    h.join(member_id=a, client_id="c0")
    h.join(member_id=b, client_id="c1")
    assert group.state.value == "CompletingRebalance"
    gen = group.generation_id
    assert h.commit_errors({("t", 0): 1}, member_id=a, generation=gen) == {
        ("t", 0): E.REBALANCE_IN_PROGRESS}
    assert h.txn_errors({("t", 0): 1}, member_id=a, generation=gen) == {("t", 0): 0}


def test_classic_static_member_fenced() -> None:
    h = TxnHarness()
    token, _ = h.join(instance_id="i1")
    h.advance(h.config.group_initial_rebalance_delay_ms)
    member = h.reply(token).member_id
    gen = h.shard.classic.get(GROUP).generation_id
    assert h.txn_errors({("t", 0): 1}, member_id="other", generation=gen,
                        instance_id="i1") == {("t", 0): E.FENCED_INSTANCE_ID}
    assert h.txn_errors({("t", 0): 1}, member_id=member, generation=gen,
                        instance_id="i1") == {("t", 0): 0}


def test_consumer_group_member_checks() -> None:
    h = TxnHarness(topics={"foo": 2})
    h.hb("a", 0)
    epoch = h.shard.consumer.groups[GROUP].members["a"].member_epoch
    # The producer sent no group metadata: accepted without checks.
    assert h.txn_errors({("foo", 0): 1}) == {("foo", 0): 0}
    # "" with an instance id is a member lookup, and fails.
    assert h.txn_errors({("foo", 0): 1}, instance_id="i") == {("foo", 0): E.UNKNOWN_MEMBER_ID}
    assert h.txn_errors({("foo", 0): 1}, member_id="zz", generation=epoch) == {
        ("foo", 0): E.UNKNOWN_MEMBER_ID}
    # A newer epoch is STALE_MEMBER_EPOCH for OffsetCommit, ILLEGAL_GENERATION here.
    assert h.txn_errors({("foo", 0): 1}, member_id="a", generation=epoch + 1) == {
        ("foo", 0): E.ILLEGAL_GENERATION}
    # No OffsetCommit-v9 floor for transactional commits of consumer-protocol members.
    assert h.txn_errors({("foo", 0): 1, ("foo", 1): 2}, member_id="a", generation=epoch,
                        version=3) == {("foo", 0): 0, ("foo", 1): 0}


def test_consumer_group_older_epoch_fails_whole_request() -> None:
    """KIP-1251 per-partition check: a stale partition fails the whole transactional
    commit with ILLEGAL_GENERATION (OffsetCommit refuses it per partition)."""
    h = TxnHarness(topics={"foo": 4})
    h.hb("a", 0)                                   # a: epoch 1, all four partitions
    h.hb("b", 0)                                   # group epoch 2
    r = h.hb("a", 1, owned={"foo": [0, 1, 2, 3]})
    kept = h.assigned(r)["foo"]
    h.hb("a", 1, owned={"foo": kept})               # a revoked the rest: epoch 2
    assert h.shard.consumer.groups[GROUP].members["a"].member_epoch == 2
    lost = sorted(set(range(4)) - set(kept))
    assert h.txn_errors({("foo", p): 1 for p in kept}, member_id="a", generation=1) == {
        ("foo", p): 0 for p in kept}
    mixed = {("foo", kept[0]): 1, ("foo", lost[0]): 1}
    assert h.txn_errors(mixed, member_id="a", generation=1) == dict.fromkeys(
        mixed, E.ILLEGAL_GENERATION)


def test_v6_answers_group_id_not_found_and_stale_member_epoch() -> None:
    """KIP-1319 (`OffsetMetadataManager.validateTransactionalOffsetCommit`, Kafka 4.4): from
    v6 an unknown group with a generation is GROUP_ID_NOT_FOUND and a stale member epoch
    is STALE_MEMBER_EPOCH (`TxnOffsetCommitRequest.supportsGroupIdNotFoundError` /
    `supportsStaleMemberEpochError`); v5 keeps ILLEGAL_GENERATION for both."""
    h = TxnHarness(topics={"foo": 4})
    assert h.txn_errors({("foo", 0): 1}, generation=1, member_id="m", version=5) == {
        ("foo", 0): E.ILLEGAL_GENERATION}
    assert h.txn_errors({("foo", 0): 1}, generation=1, member_id="m", version=6) == {
        ("foo", 0): E.GROUP_ID_NOT_FOUND}
    h.hb("a", 0)                                   # a: epoch 1, all four partitions
    epoch = h.shard.consumer.groups[GROUP].members["a"].member_epoch
    assert h.txn_errors({("foo", 0): 1}, member_id="a", generation=epoch + 1, version=5) == {
        ("foo", 0): E.ILLEGAL_GENERATION}
    assert h.txn_errors({("foo", 0): 1}, member_id="a", generation=epoch + 1, version=6) == {
        ("foo", 0): E.STALE_MEMBER_EPOCH}
    # The per-partition check (KIP-1251) of an older epoch: the same translation.
    h.hb("b", 0)
    r = h.hb("a", 1, owned={"foo": [0, 1, 2, 3]})
    kept = h.assigned(r)["foo"]
    h.hb("a", 1, owned={"foo": kept})
    lost = sorted(set(range(4)) - set(kept))
    mixed = {("foo", kept[0]): 1, ("foo", lost[0]): 1}
    assert h.txn_errors(mixed, member_id="a", generation=1, version=6) == dict.fromkeys(
        mixed, E.STALE_MEMBER_EPOCH)
    assert h.txn_errors(mixed, member_id="a", generation=1, version=5) == dict.fromkeys(
        mixed, E.ILLEGAL_GENERATION)


def test_share_group_takes_no_transactional_offsets_at_any_version() -> None:
    """`ShareGroup.validateOffsetCommit` throws GROUP_ID_NOT_FOUND and
    `validateTransactionalOffsetCommit` lets it through untranslated (Kafka 4.3 and 4.4)."""
    from groupcoord.wire.generated.share_group_heartbeat import ShareGroupHeartbeatRequest
    h = TxnHarness(topics={"foo": 1})
    h.call("share_group_heartbeat", ShareGroupHeartbeatRequest(
        group_id=GROUP, member_id="s", member_epoch=0, subscribed_topic_names=["foo"]), 1)
    assert GROUP in h.shard.share.groups
    for version in (0, 3, 5, 6):
        assert h.txn_errors({("foo", 0): 1}, version=version) == {
            ("foo", 0): E.GROUP_ID_NOT_FOUND}


def test_records_carry_the_topic_id() -> None:
    """Kafka 4.4's `OffsetAndMetadata.fromRequest(topicId, ...)`: the record names the
    topic's id (KafkaApis resolves it for every version)."""
    h = TxnHarness(topics={"foo": 1})
    result = h.txn_commit({("foo", 0): 5})
    assert result.records == [offset_commit_record(GROUP, "foo", 0, 5, -1, "", h.now, -1,
                                                   tid("foo"))]


def test_consumer_group_empty_admin_commit() -> None:
    h = TxnHarness(topics={"foo": 1})
    h.hb("a", 0)
    h.hb("a", -1)
    assert h.txn_errors({("foo", 0): 1}, member_id="x", generation=-5) == {("foo", 0): 0}


# -- deletes, expiry ------------------------------------------------------------------------

def offset_delete(h: TxnHarness, partitions: list[int], topic: str = "t") -> Any:
    req = OffsetDeleteRequest(group_id=GROUP, topics=[OffsetDeleteRequestTopic(
        name=topic, partitions=[OffsetDeleteRequestPartition(partition_index=p)
                                for p in partitions])])
    _, result = h.call("offset_delete", req, 0)
    return result


def test_offset_delete_tombstones_pending_only_partitions() -> None:
    h = TxnHarness()
    h.commit({("t", 0): 1})
    h.txn_commit({("t", 1): 5}, producer_id=1)
    result = offset_delete(h, [0, 1, 2])
    assert result.records == [offset_tombstone(GROUP, "t", 0), offset_tombstone(GROUP, "t", 1)]
    assert not h.shard.offsets.has_pending(GROUP, "t", 1)
    assert not h.shard.offsets.has_open_transactions(GROUP)
    h.marker(1, commit=True)
    assert committed(h, 1) is None   # the tombstone dropped it: nothing to materialize
    check_replay(h)


def test_delete_groups_tombstones_pending_offsets_too() -> None:
    h = TxnHarness()
    h.commit({("t", 0): 1})
    h.txn_commit({("t", 0): 2, ("t", 3): 5, ("u", 1): 6}, producer_id=1)
    result = h.apply(h.shard.delete_groups([GROUP], h.now))
    assert [r.error_code for r in result.response] == [0]
    assert result.records == [
        offset_tombstone(GROUP, "t", 0), offset_tombstone(GROUP, "t", 3),
        offset_tombstone(GROUP, "u", 1), group_tombstone(GROUP)]
    assert h.shard.snapshot().get("pending") is None
    h.marker(1, commit=True)
    assert h.shard.offsets.group(GROUP) == {}
    check_replay(h)


def test_expiry_waits_for_open_transactions() -> None:
    """testCleanupExpiredOffsetsWithPendingTransactionalOffsets."""
    retention = 60_000
    h = TxnHarness(GroupCoordinatorConfig(offsets_retention_minutes=1))
    h.commit({("t", 0): 1, ("t", 1): 1})
    h.txn_commit({("t", 0): 2}, producer_id=1)
    h.advance(retention)
    result = h.apply(h.shard.cleanup_expired_offsets(h.now))
    # t-1 expires; t-0 has a pending offset; the group stays (open transaction).
    assert result.records == [offset_tombstone(GROUP, "t", 1)]
    h.marker(1, commit=True)
    assert committed(h, 0) == 2
    h.advance(retention)
    result = h.apply(h.shard.cleanup_expired_offsets(h.now))
    assert result.records == [offset_tombstone(GROUP, "t", 0), group_tombstone(GROUP)]
    check_replay(h)


def test_group_with_only_pending_offsets_is_not_deleted_by_expiry() -> None:
    h = TxnHarness(GroupCoordinatorConfig(offsets_retention_minutes=1))
    h.txn_commit({("t", 0): 2}, producer_id=1)
    h.advance(60_000)
    assert h.apply(h.shard.cleanup_expired_offsets(h.now)).records == []
    h.marker(1, commit=False)
    assert h.apply(h.shard.cleanup_expired_offsets(h.now)).records == [group_tombstone(GROUP)]
    check_replay(h)


def test_consumer_group_expiry_waits_for_pending() -> None:
    h = TxnHarness(GroupCoordinatorConfig(offsets_retention_minutes=1), topics={"foo": 1})
    h.hb("a", 0)
    h.hb("a", -1)
    h.commit({("bar", 0): 1}, generation=-1)
    h.txn_commit({("bar", 0): 2}, producer_id=1)
    h.advance(60_000)
    assert h.apply(h.shard.cleanup_expired_offsets(h.now)).records == []
    h.marker(1, commit=False)
    records = h.apply(h.shard.cleanup_expired_offsets(h.now)).records
    assert records[0] == offset_tombstone(GROUP, "bar", 0)
    assert GROUP not in h.shard.consumer.groups
    check_replay(h)
