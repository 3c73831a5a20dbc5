"""The PostgreSQL store while its server restarts under load, on a real server: a writer
appends without pause while the fixture restarts PostgreSQL; meanwhile its calls fail with
the retriable `StorageUnavailable` (never an untyped psycopg error), its next calls connect
again by themselves, and every append it was told committed is in the log afterwards, in
order, next to nothing it did not write. A commit whose answer was lost is settled by the
next append's `expected_end_offset`, as the module promises."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from helpers.postgres_server import PostgresServer
from storage_helpers import make_batch

from groupcoord.logformat.batch import parse_header
from groupcoord.storage.config import AppendPreconditionFailed, StorageUnavailable
from groupcoord.storage.postgres_session import PostgresSession
from groupcoord.storage.postgres_store import PostgresPartitionStore, acquire_leadership

NOW = 1_700_000_000_000
LEASE_MS = 60_000
# Appends acknowledged before the restart starts, and again after it ended.
ACKS_EACH_SIDE = 20
WAIT_S = 120.0
Connect = Callable[[], PostgresSession]
_topics = (f"restart-{n}" for n in itertools.count())


@dataclass
class _Writer:
    """Appends batch after batch, each naming the end it expects, until told to stop."""

    store: PostgresPartitionStore
    # (offset, CRC) of every append whose commit was acknowledged.
    acknowledged: list[tuple[int, int]] = field(default_factory=list)
    # (offset, CRC) of appends whose answer was lost but which had landed.
    settled_landed: list[tuple[int, int]] = field(default_factory=list)
    unavailable: int = 0
    # Clear while the test restarts the server: a writer cut off waits for it, not spinning.
    server_up: threading.Event = field(default_factory=threading.Event)
    acks_changed: threading.Condition = field(default_factory=threading.Condition)
    stop: threading.Event = field(default_factory=threading.Event)
    failure: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            self.failure = exc
            with self.acks_changed:
                self.acks_changed.notify_all()

    def _run(self) -> None:
        end = 0
        for n in itertools.count():
            if self.stop.is_set():
                return
            batch = make_batch(1 + n % 3, ts=NOW + n)
            crc = parse_header(batch).crc
            while True:  # the same batch until its outcome is known
                try:
                    info = self.store.append(batch, expected_end_offset=end, now_ms=NOW)
                except StorageUnavailable:
                    self.unavailable += 1
                    self.server_up.wait(WAIT_S)
                    continue
                except AppendPreconditionFailed as failed:
                    # The lost commit had landed: the log holds this very batch at `end`.
                    stored = next(self.store.iter_batch_headers(end))
                    assert (stored.base_offset, stored.crc) == (end, crc), (stored, crc)
                    self.settled_landed.append((end, crc))
                    end = failed.actual
                    break
                with self.acks_changed:
                    self.acknowledged.append((info.base_offset, crc))
                    self.acks_changed.notify_all()
                end = info.last_offset + 1
                break

    def wait_for_acks(self, count: int) -> None:
        with self.acks_changed:
            if not self.acks_changed.wait_for(
                    lambda: len(self.acknowledged) >= count or self.failure is not None,
                    timeout=WAIT_S):
                raise AssertionError(f"only {len(self.acknowledged)} appends acknowledged")
        if self.failure is not None:
            raise self.failure


def test_appends_survive_a_server_restart_under_load(
        postgres_server: PostgresServer, postgres_connect: Connect) -> None:
    topic = next(_topics)
    session = postgres_connect()
    epoch = acquire_leadership(session, topic, 0, node_id=1, lease_ms=LEASE_MS, now_ms=NOW)
    writer = _Writer(PostgresPartitionStore(session, topic, 0, leader_epoch=epoch))
    writer.server_up.set()
    thread = threading.Thread(target=writer.run)
    thread.start()
    try:
        writer.wait_for_acks(ACKS_EACH_SIDE)
        writer.server_up.clear()
        try:
            postgres_server.restart()
        finally:
            writer.server_up.set()
        after_restart = len(writer.acknowledged)
        writer.wait_for_acks(after_restart + ACKS_EACH_SIDE)
    finally:
        writer.stop.set()
        thread.join()
    if writer.failure is not None:
        raise writer.failure

    assert writer.unavailable >= 1  # the restart cut the writer's connection
    written = sorted(writer.acknowledged + writer.settled_landed)
    reader = PostgresPartitionStore(postgres_connect(), topic, 0, leader_epoch=epoch)
    # Every batch in the log is one the writer wrote, each acknowledged one among them.
    assert [(h.base_offset, h.crc) for h in reader.iter_batch_headers()] == written


def test_a_write_cut_off_before_it_commits_leaves_nothing(
        postgres_server: PostgresServer, postgres_connect: Connect) -> None:
    """The server ends the writer's backend while its append waits for the partition row:
    `StorageUnavailable`, nothing stored, and the same append succeeds on the next call."""
    topic = next(_topics)
    session = postgres_connect()
    epoch = acquire_leadership(session, topic, 0, node_id=1, lease_ms=LEASE_MS, now_ms=NOW)
    store = PostgresPartitionStore(session, topic, 0, leader_epoch=epoch)
    store.append(make_batch(2, ts=NOW), expected_end_offset=0, now_ms=NOW)
    pid = session.connection().info.backend_pid
    outcome: list[BaseException | None] = []

    def append() -> None:
        try:
            store.append(make_batch(1, ts=NOW), expected_end_offset=2, now_ms=NOW)
            outcome.append(None)
        except StorageUnavailable as exc:
            outcome.append(exc)

    holder = postgres_connect().connection()
    observer = postgres_connect().connection()
    with holder.transaction():
        holder.execute("SELECT 1 FROM partition_state WHERE topic = %s FOR UPDATE", (topic,))
        thread = threading.Thread(target=append)
        thread.start()
        deadline = time.monotonic() + WAIT_S
        while True:  # until the append waits on the row: a round trip each look
            found = observer.execute("SELECT cardinality(pg_blocking_pids(%s))",
                                     (pid,)).fetchone()
            if found is not None and found[0] > 0:
                break
            assert time.monotonic() < deadline, "the append never waited on the row"
        observer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        thread.join()
    assert len(outcome) == 1 and isinstance(outcome[0], StorageUnavailable)
    assert store.log_end_offset == 2  # nothing of it stored; this call connected again
    assert store.append(make_batch(1, ts=NOW), expected_end_offset=2, now_ms=NOW
                        ).base_offset == 2
    with pytest.raises(AppendPreconditionFailed):  # a retry of an append that landed
        store.append(make_batch(1, ts=NOW), expected_end_offset=2, now_ms=NOW)
