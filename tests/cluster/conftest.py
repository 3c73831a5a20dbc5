"""Fixtures for brokers on PostgreSQL: the session's real PostgreSQL server, a fresh
database per test (each test its own cluster), and the `serve` arguments of a node on it."""

from __future__ import annotations

import itertools

import pytest
from helpers.postgres_server import PostgresServer, postgres_server

__all__ = ["postgres_server"]  # the session fixture, offered to every cluster test

_databases = (f"cluster_{n}" for n in itertools.count())


@pytest.fixture
def storage_url(postgres_server: PostgresServer) -> str:
    """The `--storage` URL of a new, empty database: one cluster for this test."""
    database = next(_databases)
    postgres_server.create_database(database)
    return postgres_server.url_for(database)
