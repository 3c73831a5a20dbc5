"""Leader fencing of the PostgreSQL partition store, on a real server: two stores for one
partition as two nodes, leases taken on a manual clock (`now_ms`), a deposed leader's writes
refused with nothing stored, commits surviving a server restart, and races on the partition
row with exactly one winner: two appenders at the same epoch and log end, two nodes taking a
lapsed lease; a restarted node taking its own live lease; many leases renewed at once, one
released."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import pytest
from helpers.postgres_server import PostgresServer
from storage_helpers import make_batch

from groupcoord.storage.config import (
    AppendInfo,
    AppendPreconditionFailed,
    FencedLeaderEpoch,
    LeaseHeld,
    StorageError,
    StorageUnavailable,
)
from groupcoord.storage.postgres_session import PostgresSession
from groupcoord.storage.postgres_store import (
    PostgresPartitionStore,
    acquire_leadership,
    ensure_schema,
    release_leadership,
    renew_leadership,
    renew_leases,
)

NOW = 1_700_000_000_000
LEASE_MS = 10_000
NODE_A, NODE_B = 1, 2
WAIT_FOR_LOCK_S = 30.0
Connect = Callable[[], PostgresSession]
Outcome = TypeVar("Outcome")
_topics = (f"fencing-{n}" for n in itertools.count())


@pytest.fixture
def topic() -> str:
    return next(_topics)


def _stored(store: PostgresPartitionStore) -> list[bytes]:
    return [bytes(view) for view in store.iter_batches()]


def _a_then_b(connect: Connect, topic: str
              ) -> tuple[PostgresPartitionStore, PostgresPartitionStore]:
    """Node A leads at epoch 1 and appends offsets 0-1; its lease lapses unrenewed and node B
    takes over at epoch 2."""
    session_a, session_b = connect(), connect()
    assert acquire_leadership(session_a, topic, 0, NODE_A, LEASE_MS, now_ms=NOW) == 1
    store_a = PostgresPartitionStore(session_a, topic, 0, leader_epoch=1)
    store_a.append(make_batch(2, ts=NOW), expected_end_offset=0, now_ms=NOW)
    assert acquire_leadership(session_b, topic, 0, NODE_B, LEASE_MS, now_ms=NOW + LEASE_MS) == 2
    return store_a, PostgresPartitionStore(session_b, topic, 0, leader_epoch=2)


def test_a_live_lease_keeps_the_partition_and_renewal_extends_it(
        postgres_connect: Connect, topic: str) -> None:
    session_a, session_b = postgres_connect(), postgres_connect()
    assert acquire_leadership(session_a, topic, 0, NODE_A, LEASE_MS, now_ms=NOW) == 1
    with pytest.raises(LeaseHeld) as held:
        acquire_leadership(session_b, topic, 0, NODE_B, LEASE_MS, now_ms=NOW + LEASE_MS - 1)
    assert (held.value.holder_node_id, held.value.epoch,
            held.value.lease_expiry_ms) == (NODE_A, 1, NOW + LEASE_MS)
    assert renew_leadership(session_a, topic, 0, 1, LEASE_MS, now_ms=NOW + LEASE_MS - 1
                            ) == NOW + 2 * LEASE_MS - 1
    with pytest.raises(LeaseHeld):
        acquire_leadership(session_b, topic, 0, NODE_B, LEASE_MS, now_ms=NOW + LEASE_MS)
    # A renewal never moves the expiry back.
    assert renew_leadership(session_a, topic, 0, 1, 1, now_ms=NOW) == NOW + 2 * LEASE_MS - 1
    assert acquire_leadership(session_b, topic, 0, NODE_B, LEASE_MS,
                              now_ms=NOW + 2 * LEASE_MS - 1) == 2


def test_a_deposed_leader_can_write_nothing(postgres_connect: Connect, topic: str) -> None:
    store_a, store_b = _a_then_b(postgres_connect, topic)
    before = store_b.snapshot()
    assert (before.log_start_offset, before.log_end_offset) == (0, 2)

    with pytest.raises(FencedLeaderEpoch) as fenced:
        store_a.append(make_batch(3, ts=NOW), expected_end_offset=2, now_ms=NOW)
    assert (fenced.value.epoch, fenced.value.current_epoch) == (1, 2)
    assert isinstance(fenced.value, StorageError)  # the family the server maps
    # The fence comes before the precondition: a deposed leader learns it is deposed.
    with pytest.raises(FencedLeaderEpoch):
        store_a.append(make_batch(3, ts=NOW), expected_end_offset=0, now_ms=NOW)
    with pytest.raises(FencedLeaderEpoch):
        store_a.truncate_to(0)
    with pytest.raises(FencedLeaderEpoch):
        store_a.delete_records_before(1)
    with pytest.raises(FencedLeaderEpoch):
        renew_leadership(postgres_connect(), topic, 0, 1, LEASE_MS, now_ms=NOW + LEASE_MS)
    assert store_b.snapshot() == before
    assert store_a.snapshot() == before  # reads need no leadership, and see the same

    info = store_b.append(make_batch(1, ts=NOW), expected_end_offset=2, now_ms=NOW,
                          leader_epoch=2)
    assert (info.base_offset, store_b.log_end_offset) == (2, 3)
    assert [h.partition_leader_epoch for h in store_b.iter_batch_headers()][-1] == 2
    assert _stored(store_a) == _stored(store_b)


def test_every_committed_batch_survives_a_server_restart(
        postgres_server: PostgresServer, postgres_connect: Connect, topic: str) -> None:
    _, store_b = _a_then_b(postgres_connect, topic)
    store_b.append(make_batch(3, ts=NOW) + make_batch(1, ts=NOW), expected_end_offset=2,
                   now_ms=NOW)
    store_b.delete_records_before(1)
    before = store_b.snapshot()
    assert (before.log_start_offset, before.log_end_offset) == (1, 6)

    postgres_server.restart()
    with pytest.raises(StorageUnavailable):
        store_b.snapshot()  # its connection did not survive the restart
    assert store_b.snapshot() == before  # the next call connected again

    session = postgres_connect()
    after = PostgresPartitionStore(session, topic, 0, leader_epoch=2)
    assert after.snapshot() == before
    # The leadership survived too: epoch 1 is still fenced, epoch 2 still appends.
    with pytest.raises(FencedLeaderEpoch):
        PostgresPartitionStore(session, topic, 0, leader_epoch=1).append(
            make_batch(1, ts=NOW), now_ms=NOW)
    assert after.append(make_batch(1, ts=NOW), expected_end_offset=6, now_ms=NOW
                        ).base_offset == 6


def _wait_until_blocked(observer: PostgresSession, pids: list[int]) -> None:
    """Until every backend in `pids` waits on a lock; each look is a round trip to the
    server, no sleep."""
    deadline = time.monotonic() + WAIT_FOR_LOCK_S
    while time.monotonic() < deadline:
        blocked = observer.connection().execute(
            "SELECT count(*) FROM unnest(%s::int[]) AS pid"
            " WHERE cardinality(pg_blocking_pids(pid)) > 0", (pids,)).fetchone()
        if blocked is not None and blocked[0] == len(pids):
            return
    raise AssertionError(f"backends {pids} never waited on the partition row's lock")


def _race_for_the_partition_row(connect: Connect, topic: str, conns: list[PostgresSession],
                                act: Callable[[int], Outcome]) -> list[Outcome | StorageError]:
    """`act(i)` for each of `conns` in its own thread, all queued on the partition row's lock
    while another connection holds it, then released to race for it; their outcomes."""
    outcomes: list[Outcome | StorageError] = [StorageError("not run")] * len(conns)

    def run(i: int) -> None:
        try:
            outcomes[i] = act(i)
        except StorageError as exc:
            outcomes[i] = exc

    holder = connect().connection()
    with holder.transaction():
        holder.execute("SELECT 1 FROM partition_state WHERE topic = %s FOR UPDATE", (topic,))
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(conns))]
        for thread in threads:
            thread.start()
        _wait_until_blocked(connect(), [conn.connection().info.backend_pid for conn in conns])
    for thread in threads:
        thread.join()
    return outcomes


def test_two_appenders_at_the_same_epoch_and_end_exactly_one_wins(
        postgres_connect: Connect, topic: str) -> None:
    session_a = postgres_connect()
    epoch = acquire_leadership(session_a, topic, 0, NODE_A, LEASE_MS, now_ms=NOW)
    conns = [postgres_connect(), postgres_connect()]
    stores = [PostgresPartitionStore(conn, topic, 0, leader_epoch=epoch) for conn in conns]

    outcomes = _race_for_the_partition_row(
        postgres_connect, topic, conns,
        lambda i: stores[i].append(make_batch(i + 1, ts=NOW), expected_end_offset=0,
                                   now_ms=NOW))

    won = [o for o in outcomes if isinstance(o, AppendInfo)]
    lost = [o for o in outcomes if isinstance(o, AppendPreconditionFailed)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    winner = outcomes.index(won[0])
    assert (lost[0].expected, lost[0].actual) == (0, winner + 1)
    assert [(h.base_offset, h.last_offset) for h in stores[0].iter_batch_headers()] == [
        (0, winner)]


def test_two_nodes_taking_a_lapsed_lease_at_once_exactly_one_leads(
        postgres_connect: Connect, topic: str) -> None:
    assert acquire_leadership(postgres_connect(), topic, 0, NODE_A, LEASE_MS, now_ms=NOW) == 1
    conns = [postgres_connect(), postgres_connect()]

    outcomes = _race_for_the_partition_row(
        postgres_connect, topic, conns,
        lambda i: acquire_leadership(conns[i], topic, 0, NODE_B + i, LEASE_MS,
                                     now_ms=NOW + LEASE_MS))

    assert sorted(type(o).__name__ for o in outcomes) == ["LeaseHeld", "int"], outcomes
    winner = outcomes.index(2)
    refused = outcomes[1 - winner]
    assert isinstance(refused, LeaseHeld)
    assert (refused.holder_node_id, refused.epoch) == (NODE_B + winner, 2)


def test_the_schema_is_created_once_and_ensured_again_harmlessly(
        postgres_server: PostgresServer) -> None:
    session = PostgresSession.for_conninfo(postgres_server.dsn)
    with session:
        ensure_schema(session)
        ensure_schema(session)
        tables = session.connection().execute("SELECT count(*) FROM information_schema.tables WHERE"
                              " table_name IN ('partition_state', 'partition_batches')"
                              ).fetchone()
    assert tables == (2,)


def test_a_connection_outside_autocommit_is_refused(postgres_server: PostgresServer,
                                                    topic: str) -> None:
    with PostgresSession(lambda: psycopg.connect(postgres_server.dsn)) as session:
        with pytest.raises(ValueError):
            acquire_leadership(session, topic, 0, NODE_A, LEASE_MS, now_ms=NOW)
        with pytest.raises(ValueError):
            PostgresPartitionStore(session, topic, 0, leader_epoch=1).append(
                make_batch(1, ts=NOW), now_ms=NOW)


def test_a_session_that_acknowledges_commits_before_they_are_durable_is_refused(
        postgres_server: PostgresServer, postgres_connect: Connect, topic: str) -> None:
    session_a = postgres_connect()
    epoch = acquire_leadership(session_a, topic, 0, NODE_A, LEASE_MS, now_ms=NOW)

    def connect_without_durable_commits() -> psycopg.Connection[Any]:
        conn = psycopg.connect(postgres_server.dsn, autocommit=True)
        conn.execute("SET synchronous_commit = off")
        return conn

    with PostgresSession(connect_without_durable_commits) as session:
        store = PostgresPartitionStore(session, topic, 0, leader_epoch=epoch)
        with pytest.raises(StorageError, match="synchronous_commit=off"):
            store.append(make_batch(1, ts=NOW), now_ms=NOW)
        with pytest.raises(StorageError, match="synchronous_commit=off"):
            store.append(make_batch(1, ts=NOW), now_ms=NOW)  # on every attempt
    assert PostgresPartitionStore(session_a, topic, 0, leader_epoch=epoch).log_end_offset == 0



def test_a_restarted_node_takes_its_own_live_lease_and_fences_its_old_process(
        postgres_connect: Connect, topic: str) -> None:
    old_process, new_process = postgres_connect(), postgres_connect()
    assert acquire_leadership(old_process, topic, 0, NODE_A, LEASE_MS, now_ms=NOW) == 1
    old = PostgresPartitionStore(old_process, topic, 0, leader_epoch=1)
    old.append(make_batch(1, ts=NOW), now_ms=NOW)
    # Another node waits for the lease; the same node id (a restart) takes it at once.
    with pytest.raises(LeaseHeld):
        acquire_leadership(postgres_connect(), topic, 0, NODE_B, LEASE_MS, now_ms=NOW + 1)
    assert acquire_leadership(new_process, topic, 0, NODE_A, LEASE_MS, now_ms=NOW + 1) == 2
    with pytest.raises(FencedLeaderEpoch):
        old.append(make_batch(1, ts=NOW), now_ms=NOW)
    with pytest.raises(FencedLeaderEpoch):
        renew_leadership(old_process, topic, 0, 1, LEASE_MS, now_ms=NOW + 2)
    new = PostgresPartitionStore(new_process, topic, 0, leader_epoch=2)
    assert new.append(make_batch(1, ts=NOW), expected_end_offset=1, now_ms=NOW
                      ).base_offset == 1


def test_renewing_many_leases_at_once_and_releasing_one(postgres_connect: Connect,
                                                        topic: str) -> None:
    session = postgres_connect()
    epochs = {(topic, p): acquire_leadership(session, topic, p, NODE_A, LEASE_MS, now_ms=NOW)
              for p in range(3)}
    # Node B takes partition 2 after A's lease lapses; A's renewal keeps only 0 and 1.
    assert acquire_leadership(postgres_connect(), topic, 2, NODE_B, LEASE_MS,
                              now_ms=NOW + LEASE_MS) == 2
    assert renew_leases(session, epochs, LEASE_MS, now_ms=NOW + LEASE_MS) == {
        (topic, 0), (topic, 1)}
    with pytest.raises(LeaseHeld):  # renewed: live until NOW + 2 * LEASE_MS
        acquire_leadership(postgres_connect(), topic, 0, NODE_B, LEASE_MS,
                           now_ms=NOW + 2 * LEASE_MS - 1)
    release_leadership(session, topic, 1, epochs[(topic, 1)])
    assert acquire_leadership(postgres_connect(), topic, 1, NODE_B, LEASE_MS,
                              now_ms=NOW + LEASE_MS) == 2  # at once, not after the lease
    release_leadership(session, topic, 2, epochs[(topic, 2)])  # taken already: no effect
    with pytest.raises(LeaseHeld):
        acquire_leadership(postgres_connect(), topic, 2, NODE_A, LEASE_MS,
                           now_ms=NOW + LEASE_MS + 1)
