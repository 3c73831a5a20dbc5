"""The threads a node's appends to PostgreSQL run on, so the event loop never waits for them.

An append's transaction is a few round trips and a durable commit: milliseconds, far more
under load or behind a row lock. Run on the loop, back to back under produce load, they left
every other connection unanswered for seconds. A leased partition's append
(``storage.leased_log``) instead hands its transaction to one of these threads and awaits
it; the loop serves other requests meanwhile. A psycopg session runs one transaction at a
time, so each thread has a session of its own, opened on its first write. A partition's
appends stay one at a time (its copy's ``append_lock``); several threads let different
partitions commit at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from groupcoord.storage.postgres_session import PostgresSession

Result = TypeVar("Result")

# Enough for several partitions' commits to overlap; each thread holds one connection.
APPEND_WRITER_THREADS = 4


class PostgresWriters:
    """A few threads, each running PostgreSQL writes on its own session from ``open``."""

    def __init__(self, open_session: Callable[[], PostgresSession],
                 threads: int = APPEND_WRITER_THREADS) -> None:
        self._open_session = open_session
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="postgres-writer")
        self._sessions: dict[int, PostgresSession] = {}
        self._sessions_guard = threading.Lock()

    def run(self, write: Callable[[PostgresSession], Result]) -> asyncio.Future[Result]:
        """``write`` on a writer thread with that thread's session; its outcome, awaitable
        on the running loop."""
        return asyncio.get_running_loop().run_in_executor(self._executor, self._on_thread,
                                                          write)

    def _on_thread(self, write: Callable[[PostgresSession], Result]) -> Result:
        thread = threading.get_ident()
        with self._sessions_guard:
            session = self._sessions.get(thread)
            if session is None:
                session = self._sessions[thread] = self._open_session()
        return write(session)

    def close(self) -> None:
        """Wait for the writes under way, then close every thread's session."""
        self._executor.shutdown(wait=True)
        with self._sessions_guard:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()
