"""Fixtures for storage tests: a partition directory, a log opener that closes logs, and a
real PostgreSQL server (session-wide) with a connection opener for the PostgreSQL store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.postgres_server import PostgresServer, postgres_server

from groupcoord.storage.config import LogConfig
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.postgres_session import PostgresSession
from groupcoord.storage.postgres_store import ensure_schema

__all__ = ["postgres_server"]  # the session fixture, offered to every storage test


@pytest.fixture
def log_dir(tmp_path: Path) -> str:
    return str(tmp_path / "topic-0")


@pytest.fixture
def open_log(log_dir: str) -> Iterator[Callable[..., PartitionLog]]:
    opened: list[PartitionLog] = []

    def _open(now_ms: int | None = None, **cfg: Any) -> PartitionLog:
        log = PartitionLog.open(log_dir, LogConfig(**cfg), now_ms=now_ms)
        opened.append(log)
        return log

    yield _open
    for log in opened:
        log.close()


@pytest.fixture
def postgres_connect(postgres_server: PostgresServer
                     ) -> Iterator[Callable[[], PostgresSession]]:
    """Opens sessions on the test database (each connected, the schema ensured); closes them
    after the test."""
    opened: list[PostgresSession] = []

    def _connect() -> PostgresSession:
        session = PostgresSession.for_conninfo(postgres_server.dsn)
        opened.append(session)
        ensure_schema(session)
        return session

    yield _connect
    for session in opened:
        session.close()
