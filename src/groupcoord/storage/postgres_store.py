"""A partition kept in PostgreSQL, shared by the nodes of a cluster: the ``PartitionStore``
contract with every append fenced by the appender's leader epoch.

Schema (``ensure_schema``, idempotent):

- ``partition_state``, one row per (topic, partition_index): ``log_start_offset``,
  ``log_end_offset`` and the leader lease: ``leader_node_id``, ``leader_epoch`` (0 before
  anyone led), ``lease_expiry_ms``.
- ``partition_batches``, one row per stored batch: its bytes exactly as Kafka's log keeps
  them (``data``, bytea, offsets stamped by ``storage.appending``), keyed by
  (topic, partition_index, base_offset), with ``last_offset`` indexed for the search of the
  batch holding an offset.
- ``topics``, ``cluster_documents`` and ``cluster_counters``: the cluster's topic catalog and
  metadata (``storage.postgres_catalog``).
- ``cluster_nodes``: the node registry, each node's advertised endpoints and liveness lease
  (``storage.postgres_registry``).

Leadership: ``acquire_leadership`` gives a node the partition when no lease is live (or
the live one is its own, from before a restart), and bumps the epoch; ``renew_leadership``
(``renew_leases`` for many at once) extends the lease of the current epoch;
``release_leadership`` ends it at a clean stop, so another node need not wait for it to
lapse. A store is a leader's handle on the partition at one epoch.

Why a deposed leader can never append: an append (likewise a truncation, a DeleteRecords
or a renewal) is one transaction that first locks the partition row (``SELECT ... FOR
UPDATE``), then refuses with ``FencedLeaderEpoch`` unless the row's epoch is the store's,
checks ``expected_end_offset``, inserts the batches and moves ``log_end_offset``, and
commits. Taking the leadership updates the same row, so it takes the same lock: the two
transactions are serialized. Either the append commits first (its batches are in the log
before the new leader reads the log end) or the epoch bump commits first, and the append,
which under READ COMMITTED re-reads a row it waited for at its newest committed version,
sees the new epoch and writes nothing. Every write transaction sets READ COMMITTED itself
(at REPEATABLE READ the waiter would fail with an untyped serialization error instead).
Reads run in one REPEATABLE READ, READ ONLY transaction, so offsets and batches come from
one snapshot. The lease's expiry only decides when another node may take over; the epoch
alone fences, so no clock is trusted for safety.

Durability: an append is acknowledged once its commit returns, which needs the server's
``fsync`` on and ``synchronous_commit`` not ``off`` (``on``, or a replicated level for a
standby); the session refuses every connection configured otherwise, and ``flush`` has
nothing to do. A commit whose outcome is unknown (the connection lost) is settled by the
writer's next append naming the end it expected: ``AppendPreconditionFailed`` if the first
one landed.

Everything runs on a ``PostgresSession`` (``storage.postgres_session``): psycopg 3
connections, blocking, in autocommit mode (each transaction is explicit), one opened again
after it is lost, the loss raised as the retriable ``StorageUnavailable``. A session runs one
transaction at a time: each thread needs its own store and session (``on``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import LiteralString

from groupcoord.logformat.batch import HEADER_SIZE, BatchHeader, parse_header
from groupcoord.storage.appending import PreparedAppend, prepare_append
from groupcoord.storage.config import (
    AppendInfo,
    FencedLeaderEpoch,
    InvalidRecordError,
    LeaseHeld,
    LogConfig,
    OffsetOutOfRangeError,
    StorageError,
)
from groupcoord.storage.partition_store import LogSnapshot, require_end_offset
from groupcoord.storage.postgres_session import (
    READ_ISOLATION,
    WRITE_ISOLATION,
    Cursor,
    PostgresSession,
)

_EMPTY = memoryview(b"")
# Batches fetched per query by ``iter_batches``.
_PAGE_BATCHES = 256
# The advisory lock that serializes ``ensure_schema`` across processes (CREATE ... IF NOT
# EXISTS alone races on the catalog).
_SCHEMA_LOCK_KEY = 0x67636F6F7264  # "gcoord"

_SCHEMA: tuple[LiteralString, ...] = (
    """CREATE TABLE IF NOT EXISTS partition_state (
        topic text NOT NULL,
        partition_index integer NOT NULL,
        log_start_offset bigint NOT NULL DEFAULT 0,
        log_end_offset bigint NOT NULL DEFAULT 0,
        leader_node_id integer,
        leader_epoch integer NOT NULL DEFAULT 0,
        lease_expiry_ms bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (topic, partition_index))""",
    """CREATE TABLE IF NOT EXISTS partition_batches (
        topic text NOT NULL,
        partition_index integer NOT NULL,
        base_offset bigint NOT NULL,
        last_offset bigint NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (topic, partition_index, base_offset),
        FOREIGN KEY (topic, partition_index) REFERENCES partition_state)""",
    """CREATE UNIQUE INDEX IF NOT EXISTS partition_batches_last_offset
        ON partition_batches (topic, partition_index, last_offset)""",
    """CREATE TABLE IF NOT EXISTS topics (
        name text PRIMARY KEY,
        topic_id bytea NOT NULL,
        partitions integer NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS cluster_documents (
        name text PRIMARY KEY,
        body bytea NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS cluster_counters (
        name text PRIMARY KEY,
        next_id bigint NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS cluster_nodes (
        node_id integer PRIMARY KEY,
        endpoints text NOT NULL,
        lease_expiry_ms bigint NOT NULL)""",
)

_KEY: LiteralString = "topic = %s AND partition_index = %s"


def ensure_schema(session: PostgresSession) -> None:
    """Create the tables and index if missing; safe to call from every node at once."""
    with session.transaction(WRITE_ISOLATION) as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
        for statement in _SCHEMA:
            cur.execute(statement)


@dataclass(frozen=True)
class _Lease:
    holder_node_id: int | None
    epoch: int
    expiry_ms: int


def _locked_lease(cur: Cursor, topic: str, partition: int) -> _Lease:
    """The partition's lease, its row created if new and locked until the transaction ends."""
    cur.execute("INSERT INTO partition_state (topic, partition_index) VALUES (%s, %s) "
                "ON CONFLICT DO NOTHING", (topic, partition))
    cur.execute("SELECT leader_node_id, leader_epoch, lease_expiry_ms FROM partition_state "
                "WHERE " + _KEY + " FOR UPDATE", (topic, partition))
    found = cur.fetchone()
    assert found is not None  # inserted above, and rows are never deleted
    return _Lease(found[0], found[1], found[2])


def acquire_leadership(session: PostgresSession, topic: str, partition: int, node_id: int,
                       lease_ms: int, now_ms: int) -> int:
    """Make ``node_id`` the partition's leader until ``now_ms + lease_ms``; return its new
    epoch (one more than the last). ``LeaseHeld`` while another node's lease is live (its
    expiry after ``now_ms``). A live lease of ``node_id`` itself is taken over: the node
    restarted (a node id names one process); the new epoch fences what the old process might
    still try to write."""
    with session.transaction(WRITE_ISOLATION) as cur:
        lease = _locked_lease(cur, topic, partition)
        holder = lease.holder_node_id
        if holder is not None and holder != node_id and lease.expiry_ms > now_ms:
            raise LeaseHeld(holder, lease.epoch, lease.expiry_ms)
        epoch = lease.epoch + 1
        cur.execute("UPDATE partition_state SET leader_node_id = %s, leader_epoch = %s, "
                    "lease_expiry_ms = %s WHERE " + _KEY,
                    (node_id, epoch, now_ms + lease_ms, topic, partition))
        return epoch


def renew_leadership(session: PostgresSession, topic: str, partition: int, epoch: int,
                     lease_ms: int, now_ms: int) -> int:
    """Extend the lease of the leader at ``epoch`` to ``now_ms + lease_ms`` (never back);
    return the expiry. ``FencedLeaderEpoch`` once another node has taken the partition —
    even a lapsed lease is renewed while nobody has (its epoch still fences everyone)."""
    with session.transaction(WRITE_ISOLATION) as cur:
        lease = _locked_lease(cur, topic, partition)
        if lease.epoch != epoch:
            raise FencedLeaderEpoch(epoch, lease.epoch)
        expiry = max(lease.expiry_ms, now_ms + lease_ms)
        cur.execute("UPDATE partition_state SET lease_expiry_ms = %s WHERE " + _KEY,
                    (expiry, topic, partition))
        return expiry


def renew_leases(session: PostgresSession, held: Mapping[tuple[str, int], int], lease_ms: int,
                 now_ms: int) -> set[tuple[str, int]]:
    """``renew_leadership`` of every partition in ``held`` (partition -> epoch), in one
    transaction; return the partitions renewed. The others were taken by another node."""
    if not held:
        return set()
    topics, partitions, epochs = zip(*((t, p, e) for (t, p), e in held.items()), strict=True)
    with session.transaction(WRITE_ISOLATION) as cur:
        cur.execute("UPDATE partition_state AS s SET lease_expiry_ms ="
                    " greatest(s.lease_expiry_ms, %s)"
                    " FROM unnest(%s::text[], %s::integer[], %s::integer[]) AS h(t, p, e)"
                    " WHERE s.topic = h.t AND s.partition_index = h.p AND s.leader_epoch = h.e"
                    " RETURNING s.topic, s.partition_index",
                    (now_ms + lease_ms, list(topics), list(partitions), list(epochs)))
        return {(row[0], row[1]) for row in cur.fetchall()}


def lapsed_leases(session: PostgresSession, partitions: list[tuple[str, int]], node_id: int,
                  now_ms: int) -> list[tuple[str, int]]:
    """Those of ``partitions`` whose lease nobody holds, has lapsed by ``now_ms``, or is
    ``node_id``'s own: the ones ``acquire_leadership`` may give ``node_id``."""
    if not partitions:
        return []
    topics, indexes = zip(*partitions, strict=True)
    with session.statement() as cur:
        cur.execute("SELECT s.topic, s.partition_index FROM partition_state AS s"
                    " JOIN unnest(%s::text[], %s::integer[]) AS f(t, p)"
                    " ON s.topic = f.t AND s.partition_index = f.p"
                    " WHERE s.leader_node_id IS NULL OR s.leader_node_id = %s"
                    " OR s.lease_expiry_ms <= %s",
                    (list(topics), list(indexes), node_id, now_ms))
        return [(row[0], row[1]) for row in cur.fetchall()]


def release_leadership(session: PostgresSession, topic: str, partition: int,
                       epoch: int) -> None:
    """End the lease of the leader at ``epoch`` now (a clean stop), so another node may
    take the partition at once; nothing if another node already has. The epoch stays: the
    next leader's is one more."""
    with session.transaction(WRITE_ISOLATION) as cur:
        cur.execute("UPDATE partition_state SET leader_node_id = NULL, lease_expiry_ms = 0"
                    " WHERE " + _KEY + " AND leader_epoch = %s", (topic, partition, epoch))


def fence_previous_process(session: PostgresSession, node_id: int) -> None:
    """At a node's start: free every lease ``node_id`` holds (its previous process's), each
    epoch bumped, so nothing that process might still try is appended, and the partitions
    go wherever their shares say."""
    with session.transaction(WRITE_ISOLATION) as cur:
        cur.execute("UPDATE partition_state SET leader_node_id = NULL, lease_expiry_ms = 0,"
                    " leader_epoch = leader_epoch + 1 WHERE leader_node_id = %s", (node_id,))


@dataclass(frozen=True)
class PartitionOffsets:
    """A partition's log start and end offsets, read together."""

    log_start_offset: int
    log_end_offset: int


class PostgresPartitionStore:
    """One partition in PostgreSQL, written by the leader at ``leader_epoch`` (from
    ``acquire_leadership``); reads need no leadership. Every call may raise
    ``StorageUnavailable`` while PostgreSQL cannot be reached; the next one connects again."""

    def __init__(self, session: PostgresSession, topic: str, partition: int, *,
                 leader_epoch: int, config: LogConfig | None = None) -> None:
        self.config = config or LogConfig()
        self.topic = topic
        self.partition = partition
        self.leader_epoch = leader_epoch
        self._session = session

    def on(self, session: PostgresSession) -> PostgresPartitionStore:
        """This store (the same partition, epoch and config) running on ``session``: for
        another thread."""
        return PostgresPartitionStore(session, self.topic, self.partition,
                                      leader_epoch=self.leader_epoch, config=self.config)

    @property
    def _key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def _offsets(self, cur: Cursor, *, lock: bool = False) -> PartitionOffsets:
        """The row's offsets; with ``lock``, locked for this transaction and fenced: the
        row's epoch must be the store's."""
        cur.execute("SELECT log_start_offset, log_end_offset, leader_epoch FROM partition_state"
                    " WHERE " + _KEY + (" FOR UPDATE" if lock else ""), self._key)
        found = cur.fetchone()
        if found is None:
            raise StorageError(f"partition {self.topic}-{self.partition} has no leader yet")
        start, end, epoch = found
        if lock and epoch != self.leader_epoch:
            raise FencedLeaderEpoch(self.leader_epoch, epoch)
        return PartitionOffsets(start, end)

    def offsets(self) -> PartitionOffsets:
        """Both offsets from one snapshot."""
        with self._session.statement() as cur:  # one statement: one snapshot
            return self._offsets(cur)

    @property
    def log_start_offset(self) -> int:
        return self.offsets().log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.offsets().log_end_offset

    # -- appending -------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview, *,
               expected_end_offset: int | None = None, assign_offsets: bool = True,
               now_ms: int | None = None, leader_epoch: int | None = None,
               allow_control: bool = False, trusted: bool = False) -> AppendInfo:
        """Validate and append whole batches in one transaction (``PartitionStore.append``);
        ``FencedLeaderEpoch`` once another node leads. ``leader_epoch`` is stamped into the
        batches, as in the other stores; the fencing epoch is the store's."""
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        with self._session.transaction(WRITE_ISOLATION) as cur:
            offsets = self._offsets(cur, lock=True)
            require_end_offset(expected_end_offset, offsets.log_end_offset)
            prepared = prepare_append(data, self.config, offsets.log_end_offset, now,
                                      assign_offsets=assign_offsets, leader_epoch=leader_epoch,
                                      allow_control=allow_control, trusted=trusted)
            self._insert(cur, prepared)
            return prepared.info(offsets.log_start_offset)

    def append_prepared(self, prepared: PreparedAppend, *,
                        expected_end_offset: int) -> AppendInfo:
        """Store batches already prepared (``storage.appending``) for a log ending at
        ``expected_end_offset``, as they are: fenced and preconditioned as ``append``."""
        with self._session.transaction(WRITE_ISOLATION) as cur:
            offsets = self._offsets(cur, lock=True)
            require_end_offset(expected_end_offset, offsets.log_end_offset)
            if prepared.headers[0].base_offset < offsets.log_end_offset:
                raise InvalidRecordError(
                    f"batch offset {prepared.headers[0].base_offset} below log end offset "
                    f"{offsets.log_end_offset}")
            self._insert(cur, prepared)
            return prepared.info(offsets.log_start_offset)

    def _insert(self, cur: Cursor, prepared: PreparedAppend) -> None:
        """Insert the batches and move the log end after them (the row locked and fenced)."""
        rows = []
        pos = 0
        for header in prepared.headers:
            rows.append((*self._key, header.base_offset, header.last_offset,
                         bytes(prepared.buf[pos : pos + header.size])))
            pos += header.size
        cur.executemany("INSERT INTO partition_batches (topic, partition_index, "
                        "base_offset, last_offset, data) VALUES (%s, %s, %s, %s, %s)", rows)
        cur.execute("UPDATE partition_state SET log_end_offset = %s WHERE " + _KEY,
                    (prepared.headers[-1].last_offset + 1, *self._key))

    # -- reading ---------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> memoryview:
        """Whole batches from the one holding ``offset`` (``PartitionStore.read``)."""
        with self._session.transaction(READ_ISOLATION) as cur:
            offsets = self._offsets(cur)
            start, end = offsets.log_start_offset, offsets.log_end_offset
            if offset < start or offset > end:
                raise OffsetOutOfRangeError(f"offset {offset} outside [{start}, {end}]")
            if offset == end or (max_offset is not None and offset >= max_offset):
                return _EMPTY
            # The longest run of batches whose sizes add up to max_bytes, and the first one
            # whole even when larger, as in Kafka.
            cur.execute(
                "SELECT data FROM (SELECT data, last_offset,"
                " row_number() OVER (ORDER BY last_offset) AS n,"
                " sum(octet_length(data)) OVER (ORDER BY last_offset) AS upto"
                " FROM partition_batches WHERE " + _KEY +
                " AND last_offset >= %s AND base_offset < %s) AS run"
                " WHERE n = 1 OR upto <= %s ORDER BY last_offset",
                (*self._key, offset, end if max_offset is None else max_offset, max_bytes))
            return memoryview(b"".join(row[0] for row in cur))

    def iter_batches(self, from_offset: int | None = None) -> Iterator[memoryview]:
        """Every batch from the log start, or from the one holding ``from_offset``: batches
        wholly below the log start are deleted with the move of the start, so every stored
        batch from that offset is one to yield. Fetched a page per query."""
        next_last = -1 if from_offset is None else from_offset
        while True:
            with self._session.statement() as cur:
                cur.execute("SELECT last_offset, data FROM partition_batches WHERE " + _KEY +
                            " AND last_offset >= %s ORDER BY last_offset LIMIT %s",
                            (*self._key, next_last, _PAGE_BATCHES))
                page = cur.fetchall()
            for _, data in page:
                yield memoryview(data)
            if len(page) < _PAGE_BATCHES:
                return
            next_last = page[-1][0] + 1

    def batch_header(self, offset: int) -> BatchHeader | None:
        """The header of the stored batch holding ``offset`` (or the first after it), None
        past the last; only the header's bytes are fetched."""
        with self._session.statement() as cur:
            cur.execute("SELECT substring(data from 1 for %s) FROM partition_batches WHERE "
                        + _KEY + " AND last_offset >= %s ORDER BY last_offset LIMIT 1",
                        (HEADER_SIZE, *self._key, offset))
            found = cur.fetchone()
        return None if found is None else parse_header(found[0])

    def iter_batch_headers(self, from_offset: int | None = None) -> Iterator[BatchHeader]:
        for view in self.iter_batches(from_offset):
            yield parse_header(view)

    # -- truncation and DeleteRecords ------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or after ``offset`` (``PartitionStore.truncate_to``);
        fenced as an append is."""
        with self._session.transaction(WRITE_ISOLATION) as cur:
            offsets = self._offsets(cur, lock=True)
            if offset >= offsets.log_end_offset:
                return
            cur.execute("DELETE FROM partition_batches WHERE " + _KEY + " AND last_offset >= %s",
                        (*self._key, offset))
            cur.execute("SELECT max(last_offset) FROM partition_batches WHERE " + _KEY,
                        self._key)
            found = cur.fetchone()
            last = None if found is None else found[0]
            end = offset if last is None else last + 1
            cur.execute("UPDATE partition_state SET log_start_offset = %s, log_end_offset = %s"
                        " WHERE " + _KEY,
                        (min(offsets.log_start_offset, end), end, *self._key))

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to ``offset``; return the new start.
        Fenced as an append is."""
        with self._session.transaction(WRITE_ISOLATION) as cur:
            offsets = self._offsets(cur, lock=True)
            if offset > offsets.log_end_offset:
                raise OffsetOutOfRangeError(
                    f"offset {offset} beyond log end offset {offsets.log_end_offset}")
            start = max(offsets.log_start_offset, offset)
            cur.execute("DELETE FROM partition_batches WHERE " + _KEY + " AND last_offset < %s",
                        (*self._key, start))
            cur.execute("UPDATE partition_state SET log_start_offset = %s WHERE " + _KEY,
                        (start, *self._key))
            return start

    # -- durability and snapshots ----------------------------------------------------------

    def flush(self) -> None:
        """Nothing to do: every committed append is already durable."""

    def snapshot(self) -> LogSnapshot:
        """Offsets and batches from one snapshot; the recovery point is the log end, since
        everything committed is durable."""
        with self._session.transaction(READ_ISOLATION) as cur:
            offsets = self._offsets(cur)
            cur.execute("SELECT data FROM partition_batches WHERE " + _KEY +
                        " ORDER BY last_offset", self._key)
            batches = b"".join(row[0] for row in cur)
        return LogSnapshot(offsets.log_start_offset, offsets.log_end_offset,
                           offsets.log_end_offset, batches)
