"""A PostgreSQL connection that outlives the server going away: what every PostgreSQL store
and lease call runs its transactions on.

A ``PostgresSession`` holds a way to connect (a factory of psycopg 3 connections), not one
fixed connection. It opens a connection on first use, checks it (autocommit mode, durable
commits), and keeps it until the server or the network drops it. A lost connection
(``psycopg.OperationalError``: the server restarting or shutting down, a broken socket, a
refused connect) becomes ``StorageUnavailable``, a retriable storage error the broker answers
with Kafka's KAFKA_STORAGE_ERROR, and the session forgets the connection, so the next call
connects again.

A transaction that failed that way may or may not have committed (the connection can drop
between the server's commit and its answer). The stores settle that the way the
``PartitionStore`` contract offers: the writer's next append names the end offset it
expected, and fails with ``AppendPreconditionFailed`` if the lost one landed.

A session runs one transaction at a time, blocking: each thread needs its own session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Self

import psycopg
from psycopg import IsolationLevel
from psycopg.rows import TupleRow

from groupcoord.storage.config import StorageError, StorageUnavailable


@dataclass(frozen=True)
class TransactionMode:
    """How a transaction runs, named in its BEGIN: no round trip of its own. Appends run
    back to back (on the node's writer threads), so every round trip of theirs counts."""

    isolation: IsolationLevel
    read_only: bool


# Every write transaction's level (the stores' fencing relies on READ COMMITTED re-reading
# a row it waited for), and every multi-statement read's: one snapshot, no writes.
WRITE_ISOLATION = TransactionMode(IsolationLevel.READ_COMMITTED, read_only=False)
READ_ISOLATION = TransactionMode(IsolationLevel.REPEATABLE_READ, read_only=True)

Connection = psycopg.Connection[TupleRow]
Cursor = psycopg.Cursor[TupleRow]
ConnectionFactory = Callable[[], Connection]


def connection_factory(conninfo: str) -> ConnectionFactory:
    """Connections to ``conninfo`` (a libpq string or ``postgresql://`` URL) in autocommit
    mode, as the stores need them."""
    def connect() -> Connection:
        return psycopg.connect(conninfo, autocommit=True)
    return connect


class PostgresSession:
    """One connection at a time from ``connect``, replaced after it is lost."""

    def __init__(self, connect: ConnectionFactory) -> None:
        self._connect = connect
        self._conn: Connection | None = None

    @classmethod
    def for_conninfo(cls, conninfo: str) -> PostgresSession:
        return cls(connection_factory(conninfo))

    def sibling(self) -> PostgresSession:
        """A new session connecting as this one does: for another thread."""
        return PostgresSession(self._connect)

    def connection(self) -> Connection:
        """The live connection, opened (and checked) if there is none;
        ``StorageUnavailable`` if the server cannot be reached."""
        if self._conn is not None and not (self._conn.closed or self._conn.broken):
            return self._conn
        self.close()
        try:
            conn = self._connect()
        except psycopg.OperationalError as exc:
            raise StorageUnavailable(f"PostgreSQL cannot be reached: {exc}") from exc
        try:
            with self._translated():
                _require_autocommit(conn)
                _require_durable_commits(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    @contextmanager
    def transaction(self, mode: TransactionMode) -> Iterator[Cursor]:
        """One explicit transaction in ``mode``: committed on exit, rolled back on error;
        ``StorageUnavailable`` if the connection is lost (then whether it committed is
        unknown)."""
        conn = self.connection()
        # Outside a transaction (autocommit), so setting these sends nothing; the BEGIN
        # that conn.transaction() sends carries them.
        conn.isolation_level = mode.isolation
        conn.read_only = mode.read_only
        with self._translated(), conn.transaction(), conn.cursor() as cur:
            yield cur

    @contextmanager
    def statement(self) -> Iterator[Cursor]:
        """A cursor for single statements outside an explicit transaction (each one its own
        snapshot); ``StorageUnavailable`` if the connection is lost."""
        conn = self.connection()
        with self._translated(), conn.cursor() as cur:
            yield cur

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except psycopg.OperationalError as exc:
            # Lost or unusable: the next call connects again.
            self.close()
            raise StorageUnavailable(f"the PostgreSQL connection failed: {exc}") from exc

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _require_autocommit(conn: Connection) -> None:
    """Refuse a connection that would hold an implicit transaction (and its snapshot and
    locks) open between our statements."""
    if not conn.autocommit:
        raise ValueError("the PostgreSQL store needs a connection in autocommit mode")


def _require_durable_commits(conn: Connection) -> None:
    """Refuse a server that acknowledges a commit before it is on disk."""
    with conn.cursor() as cur:
        cur.execute("SELECT current_setting('fsync'), current_setting('synchronous_commit')")
        found = cur.fetchone()
    assert found is not None
    fsync, synchronous_commit = found
    if fsync != "on" or synchronous_commit == "off":
        raise StorageError(f"PostgreSQL commits are not durable (fsync={fsync}, "
                           f"synchronous_commit={synchronous_commit})")
