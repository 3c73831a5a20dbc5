"""A real PostgreSQL server for tests (Debian's `postgresql`, installed by `make test`): the
throwaway server of `groupcoord.cli.local_postgres` (initdb into a temporary directory, a free
loopback port, fsync and synchronous commit on), one per session. Locally a missing server
skips the tests that need it; in CI it fails them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.cli.local_postgres import DATABASE, SUPERUSER, LocalPostgres, find_bin_dir

__all__ = ["DATABASE", "SUPERUSER", "PostgresServer", "postgres_bin_dir", "postgres_server"]


def postgres_bin_dir() -> Path:
    """The directory of `initdb` and `pg_ctl`; skips (fails in CI) when not installed."""
    found = find_bin_dir()
    if found is not None:
        return found
    reason = "PostgreSQL is not installed (make test installs Debian's package)"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


class PostgresServer(LocalPostgres):
    """The local server, from the installed binaries (or the test skipped)."""

    def __init__(self) -> None:
        super().__init__(postgres_bin_dir())


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session (one per xdist worker); tests keep apart by
    the names they store under (a fresh topic per store)."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()
