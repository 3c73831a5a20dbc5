"""A node's partitions on PostgreSQL (`PostgresLogManager` and its `LeasedPartitionLog`
copies), on a real server: what a node appends is in PostgreSQL and found by the next node on
the same storage, even from an empty data dir (appended off the loop too, in order, fenced
once deposed); a second node while the first holds live leases follows and can write nothing; a lease pass moves a lapsed lease to it (a manual clock
for the leases); a lease taken whose catch-up fails is left out of what the pass reports
taken and taken again at the next; a deposed leader steps down with nothing written; a copy that differs from
PostgreSQL's log is made again, one missing a committed batch takes it in before the next
write; a deleted topic's copies go; id blocks never overlap; with a placement, live nodes
share the partitions and a dead node's share is taken."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.postgres_server import PostgresServer
from storage_helpers import make_batch

from groupcoord.server.cluster_map import preferred_node
from groupcoord.storage.config import FencedLeaderEpoch, NotPartitionLeader, StorageUnavailable
from groupcoord.storage.postgres_catalog import PostgresDocuments, list_topics
from groupcoord.storage.postgres_manager import PostgresLogManager
from groupcoord.storage.postgres_session import PostgresSession
from groupcoord.storage.postgres_store import PostgresPartitionStore, ensure_schema

NOW = 1_700_000_000_000
LEASE_MS = 9000
NODE_A, NODE_B = 1, 2
TOPIC_ID = bytes(range(16))
_topics = (f"manager-{n}" for n in itertools.count())


class ManualClock:
    def __init__(self) -> None:
        self.now_ms = NOW

    def __call__(self) -> int:
        return self.now_ms


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def topic() -> str:
    return next(_topics)


Open = Callable[[int, Path], PostgresLogManager]


@pytest.fixture
def open_node(postgres_server: PostgresServer, clock: ManualClock
              ) -> Iterator[Open]:
    """Opens a node (its id, its data dir) on the test database; closes the ones left open."""
    opened: list[PostgresLogManager] = []

    def _open(node_id: int, data_dir: Path) -> PostgresLogManager:
        node = PostgresLogManager(str(data_dir), PostgresSession.for_conninfo(
            postgres_server.dsn), node_id=node_id, lease_ms=LEASE_MS, clock_ms=clock)
        node.load_all(now_ms=NOW)
        opened.append(node)
        return node

    yield _open
    for node in opened:
        if node.leased:  # not closed by the test
            node.close()


def _batches(node: PostgresLogManager, topic: str) -> list[bytes]:
    copy = node.leased[(topic, 0)]
    return [bytes(view) for view in copy.iter_batches()]


def test_the_next_node_finds_what_the_last_appended(open_node: Open, topic: str,
                                                    tmp_path: Path) -> None:
    first = open_node(NODE_A, tmp_path / "a")
    copy = first.get_or_create(topic, 0, TOPIC_ID)
    assert copy.leader is not None
    copy.append(make_batch(2, ts=NOW), now_ms=NOW)
    copy.append(make_batch(3, ts=NOW), now_ms=NOW)
    assert copy.delete_records_before(2) == 2
    written = _batches(first, topic)
    first.close()

    # Another node, another (empty) data dir: its copy comes from PostgreSQL.
    second = open_node(NODE_B, tmp_path / "b")
    assert second.topic_ids[topic] == TOPIC_ID
    found = second.leased[(topic, 0)]
    assert found.leader is not None  # the clean close released the lease
    assert (found.log_start_offset, found.log_end_offset) == (2, 5)
    assert _batches(second, topic) == written
    assert found.source.offsets().log_end_offset == 5


def test_a_second_node_follows_while_the_first_leads(open_node: Open, topic: str,
                                                     tmp_path: Path, clock: ManualClock
                                                     ) -> None:
    first = open_node(NODE_A, tmp_path / "a")
    first.get_or_create(topic, 0, TOPIC_ID).append(make_batch(2, ts=NOW), now_ms=NOW)

    second = open_node(NODE_B, tmp_path / "b")
    follower = second.leased[(topic, 0)]
    assert follower.leader is None and follower.log_end_offset == 2
    with pytest.raises(NotPartitionLeader):
        follower.append(make_batch(1, ts=NOW), now_ms=NOW)
    with pytest.raises(NotPartitionLeader):
        follower.delete_records_before(1)
    assert follower.log_end_offset == 2 and follower.source.offsets().log_end_offset == 2

    # The first renews; the second finds nothing to take.
    clock.now_ms += LEASE_MS - 1
    plan = first.lease_plan()
    first.apply(first.run_lease_pass(first.session, plan), plan)
    clock.now_ms += LEASE_MS - 1
    plan_b = second.lease_plan()
    assert (topic, 0) not in second.run_lease_pass(second.session, plan_b).taken

    # The first stops renewing (paused); past its lease the second takes over.
    leader = first.leased[(topic, 0)]
    leader.append(make_batch(1, ts=NOW), now_ms=NOW)  # still its partition: offset 2
    clock.now_ms += LEASE_MS
    plan_b = second.lease_plan()
    taken = second.run_lease_pass(second.session, plan_b)
    assert (topic, 0) in taken.taken
    second.apply(taken, plan_b)
    assert follower.leader is not None and follower.log_end_offset == 3  # caught up
    follower.append(make_batch(4, ts=NOW), now_ms=NOW)

    # The paused node comes back: fenced, it steps down having written nothing.
    with pytest.raises(FencedLeaderEpoch):
        leader.append(make_batch(1, ts=NOW), now_ms=NOW)
    assert leader.leader is None
    plan = first.lease_plan()
    # The second's lease is live.
    assert (topic, 0) not in first.run_lease_pass(first.session, plan).taken
    assert follower.source.offsets().log_end_offset == 7
    assert leader.log_end_offset == 3  # its copy: only what it had committed


def test_appends_off_the_loop_keep_the_order_and_the_fencing(
        open_node: Open, topic: str, tmp_path: Path, clock: ManualClock) -> None:
    """`append_async` commits on a writer thread, then stores in the copy: appends queued
    on the partition's lock land one after another, each at the end the last one left; a
    deposed leader's next one is fenced and steps down, nothing written."""
    first = open_node(NODE_A, tmp_path / "a")
    leader = first.get_or_create(topic, 0, TOPIC_ID)

    async def append(count: int) -> tuple[int, int]:
        async with leader.append_lock:
            info = await leader.append_async(make_batch(count, ts=NOW), now_ms=NOW)
        return info.base_offset, info.last_offset

    async def scenario() -> None:
        assert await asyncio.gather(append(2), append(3), append(1)) == [(0, 1), (2, 4),
                                                                         (5, 5)]
        assert leader.log_end_offset == 6 == leader.source.offsets().log_end_offset
        assert _batches(first, topic) == [bytes(view)
                                          for view in leader.source.iter_batches()]

        # The first stops renewing; past its lease another node takes the partition.
        second = open_node(NODE_B, tmp_path / "b")
        clock.now_ms += LEASE_MS + 1
        plan = second.lease_plan()
        second.apply(second.run_lease_pass(second.session, plan), plan)
        assert second.leased[(topic, 0)].leader is not None
        with pytest.raises(FencedLeaderEpoch):
            await append(1)
        assert leader.leader is None and leader.log_end_offset == 6
        assert leader.source.offsets().log_end_offset == 6

    asyncio.run(scenario())


def test_a_copy_unlike_the_log_of_record_is_made_again(open_node: Open, topic: str,
                                                       tmp_path: Path) -> None:
    first = open_node(NODE_A, tmp_path / "a")
    copy = first.get_or_create(topic, 0, TOPIC_ID)
    copy.append(make_batch(2, ts=NOW), now_ms=NOW)
    copy.append(make_batch(3, ts=NOW), now_ms=NOW)
    assert copy.delete_records_before(2) == 2
    first.close()
    second = open_node(NODE_B, tmp_path / "b")
    copy = second.leased[(topic, 0)]
    # The log of record loses its last batch (an unacknowledged write cut off) and goes on
    # differently: the first node's copy is stale.
    copy.truncate_to(2)
    copy.append(make_batch(1, ts=NOW + 1), now_ms=NOW)
    second.close()

    again = open_node(NODE_A, tmp_path / "a")
    made_again = again.leased[(topic, 0)]
    assert (made_again.log_start_offset, made_again.log_end_offset) == (2, 3)
    assert _batches(again, topic) == [bytes(v) for v in made_again.source.iter_batches()]


def test_a_deleted_topic_leaves_the_catalog_and_the_copies(
        open_node: Open, topic: str, tmp_path: Path, postgres_server: PostgresServer) -> None:
    first = open_node(NODE_A, tmp_path / "a")
    first.get_or_create(topic, 0, TOPIC_ID).append(make_batch(2, ts=NOW), now_ms=NOW)
    second = open_node(NODE_B, tmp_path / "b")
    assert (tmp_path / "b" / f"{topic}-0").is_dir()
    old = first.leased[(topic, 0)]
    epoch = old.leader.leader_epoch if old.leader is not None else None
    second.delete_topic(topic)
    with pytest.raises(FencedLeaderEpoch):  # the deletion fenced the leader
        old.append(make_batch(1, ts=NOW), now_ms=NOW)
    assert epoch is not None
    with PostgresSession.for_conninfo(postgres_server.dsn) as session:
        assert topic not in list_topics(session)
    first.close()
    again = open_node(NODE_A, tmp_path / "a")
    assert (topic, 0) not in again.leased and not (tmp_path / "a" / f"{topic}-0").exists()


def test_id_blocks_claimed_by_two_nodes_never_overlap(postgres_server: PostgresServer) -> None:
    """The producer-id counter in PostgreSQL: each claim a block nobody had, also across
    nodes, and never below the id a claimer asks to start from."""
    with PostgresSession.for_conninfo(postgres_server.dsn) as session_a, \
            PostgresSession.for_conninfo(postgres_server.dsn) as session_b:
        ensure_schema(session_a)
        node_a, node_b = PostgresDocuments(session_a), PostgresDocuments(session_b)
        counter = f"ids-{next(_topics)}"
        assert node_a.claim_block(counter, 0, 1000) == 0
        assert node_b.claim_block(counter, 0, 1000) == 1000
        assert node_a.claim_block(counter, 1000, 1000) == 2000
        assert node_b.claim_block(counter, 5000, 1000) == 5000  # an id seen in a log
        assert node_a.claim_block(counter, 0, 1000) == 6000


def test_a_write_the_copy_missed_is_taken_in_before_the_next(open_node: Open, topic: str,
                                                             tmp_path: Path) -> None:
    """PostgreSQL holds a batch the copy lacks (as after a commit whose answer was lost): the
    next append is refused, retriable, once the copy has taken the batch in; the one after
    that appends after it."""
    node = open_node(NODE_A, tmp_path / "a")
    copy = node.get_or_create(topic, 0, TOPIC_ID)
    copy.append(make_batch(2, ts=NOW), now_ms=NOW)
    leader = copy.leader
    assert leader is not None
    landed = PostgresPartitionStore(node.session, topic, 0, leader_epoch=leader.leader_epoch)
    landed.append(make_batch(1, ts=NOW + 1), expected_end_offset=2, now_ms=NOW)

    with pytest.raises(StorageUnavailable):  # the log of record moved: settle first
        copy.append(make_batch(3, ts=NOW), now_ms=NOW)
    with pytest.raises(StorageUnavailable, match="had landed"):
        copy.append(make_batch(3, ts=NOW), now_ms=NOW)
    assert copy.log_end_offset == 3  # the landed batch is in the copy now
    assert copy.append(make_batch(3, ts=NOW), now_ms=NOW).base_offset == 3
    assert _batches(node, topic) == [bytes(v) for v in copy.source.iter_batches()]


def _drop_connection(session: PostgresSession, dsn: str) -> None:
    """End the server side of ``session``'s connection, as a restart of PostgreSQL would:
    its next statement fails (``StorageUnavailable``), the one after connects again."""
    pid = session.connection().info.backend_pid
    with PostgresSession.for_conninfo(dsn) as other, other.statement() as cur:
        cur.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))


def test_a_lease_taken_whose_catch_up_fails_is_left_out_and_taken_at_the_next_pass(
        open_node: Open, topic: str, tmp_path: Path, clock: ManualClock,
        postgres_server: PostgresServer) -> None:
    """The connection lost while a pass's taken leases are led: the partition whose catch-up
    failed is not led and not reported taken (so the broker, which follows the taken ones,
    follows exactly what is led), the others are led; the next pass takes it again and leads
    it caught up."""
    first = open_node(NODE_A, tmp_path / "a")
    for partition in (0, 1):
        first.get_or_create(topic, partition, TOPIC_ID).append(make_batch(2, ts=NOW),
                                                               now_ms=NOW)
    second = open_node(NODE_B, tmp_path / "b")
    clock.now_ms += LEASE_MS  # the first stopped renewing
    plan = second.lease_plan()
    result = second.run_lease_pass(second.session, plan)
    taken = set(result.taken)
    assert {(topic, 0), (topic, 1)} <= taken

    _drop_connection(second.session, postgres_server.dsn)
    second.apply(result, plan)
    led = {tp for tp in taken if second.leased[tp].leader is not None}
    assert set(result.taken) == led and len(led) == len(taken) - 1

    [missed] = taken - led
    plan = second.lease_plan()
    again = second.run_lease_pass(second.session, plan)
    assert missed in again.taken
    second.apply(again, plan)
    copy = second.leased[missed]
    assert copy.leader is not None and copy.log_end_offset == copy.source.offsets().log_end_offset


def _lease_pass(node: PostgresLogManager, topic: str) -> tuple[set[int], set[int]]:
    """A pass; the partitions of `topic` it released and took (the test database holds
    other tests' topics too)."""
    plan = node.lease_plan()
    result = node.run_lease_pass(node.session, plan)
    node.apply(result, plan)
    return ({p for t, p in result.released if t == topic},
            {p for t, p in result.taken if t == topic})


def test_live_nodes_share_the_partitions_and_a_dead_nodes_share_is_taken(
        postgres_server: PostgresServer, clock: ManualClock, topic: str,
        tmp_path: Path) -> None:
    """With a placement, a node alone leads everything; a second node that joins follows
    until the first releases the second's share in its next pass, and takes it in its own;
    both then tell the same leaders. The second stops renewing (dead): past its lease the
    first is the only live node and takes the second's share back."""
    opened: list[PostgresLogManager] = []

    def open_sharing(node_id: int, data_dir: Path) -> PostgresLogManager:
        node = PostgresLogManager(str(data_dir), PostgresSession.for_conninfo(
            postgres_server.dsn), node_id=node_id, lease_ms=LEASE_MS, clock_ms=clock,
            placement=preferred_node)
        node.load_all(now_ms=NOW)
        opened.append(node)
        return node

    # Node ids no other test registers: the registry is the database's.
    first_id, second_id = 101, 102
    try:
        first = open_sharing(first_id, tmp_path / "a")
        for partition in (0, 1):
            first.get_or_create(topic, partition, TOPIC_ID).append(make_batch(1, ts=NOW),
                                                                   now_ms=NOW)
        assert all(first.leased[(topic, p)].leader is not None for p in (0, 1))

        second = open_sharing(second_id, tmp_path / "b")
        assert all(second.leased[(topic, p)].leader is None for p in (0, 1))
        share = {p: preferred_node(topic, p, [first_id, second_id]) for p in (0, 1)}
        assert set(share.values()) == {first_id, second_id}
        theirs = next(p for p, node_id in share.items() if node_id == second_id)

        assert _lease_pass(first, topic) == ({theirs}, set())
        assert first.leader((topic, theirs)) is None
        assert _lease_pass(second, topic) == (set(), {theirs})
        _lease_pass(first, topic)
        for node in (first, second):
            assert {p: node.leader((topic, p)).node_id for p in (0, 1)} == share  # type: ignore[union-attr]
            assert [n.node_id for n in node.live_nodes()] == [first_id, second_id]
        copy = second.leased[(topic, theirs)]
        assert copy.log_end_offset == 1  # caught up when it took the lease
        copy.append(make_batch(1, ts=NOW), now_ms=NOW)

        # The second stops renewing; the first renews its own past the second's lease.
        clock.now_ms += LEASE_MS
        assert _lease_pass(first, topic) == (set(), {theirs})
        assert [n.node_id for n in first.live_nodes()] == [first_id]
        assert first.leased[(topic, theirs)].log_end_offset == 2
        with pytest.raises(FencedLeaderEpoch):
            copy.append(make_batch(1, ts=NOW), now_ms=NOW)
    finally:
        for node in opened:
            node.close()
