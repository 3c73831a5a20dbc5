"""A `PostgresSession`'s transaction modes on a real server: each transaction runs at the
mode its BEGIN names (no statement of its own), and the connection is back in autocommit,
outside any transaction, once it ends."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

from groupcoord.storage.postgres_session import (
    READ_ISOLATION,
    WRITE_ISOLATION,
    PostgresSession,
    TransactionMode,
)


def _mode_inside(session: PostgresSession, mode: TransactionMode) -> tuple[str, str]:
    with session.transaction(mode) as cur:
        cur.execute("SELECT current_setting('transaction_isolation'),"
                    " current_setting('transaction_read_only')")
        found = cur.fetchone()
    assert found is not None
    return found[0], found[1]


def test_writes_run_read_committed(postgres_connect: Callable[[], PostgresSession]) -> None:
    session = postgres_connect()
    assert _mode_inside(session, WRITE_ISOLATION) == ("read committed", "off")


def test_reads_run_on_one_read_only_snapshot(
        postgres_connect: Callable[[], PostgresSession]) -> None:
    session = postgres_connect()
    assert _mode_inside(session, READ_ISOLATION) == ("repeatable read", "on")
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), \
            session.transaction(READ_ISOLATION) as cur:
        cur.execute("CREATE TABLE refused (x int)")


def test_modes_alternate_on_one_connection(
        postgres_connect: Callable[[], PostgresSession]) -> None:
    """A read after a write, and a write after a read, each in its own mode; between them
    the connection holds no transaction."""
    session = postgres_connect()
    for mode, expected in [(WRITE_ISOLATION, ("read committed", "off")),
                           (READ_ISOLATION, ("repeatable read", "on")),
                           (WRITE_ISOLATION, ("read committed", "off"))]:
        assert _mode_inside(session, mode) == expected
        conn = session.connection()
        assert conn.autocommit
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
