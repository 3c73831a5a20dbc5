"""Small metadata documents the broker keeps whole and rewrites on every change (the topic
configs and dynamic broker configs of ``server.topics``), and blocks of ids claimed from a
counter (the producer ids of ``server.producer_state``): in the data dir beside the logs,
or in PostgreSQL with the cluster's logs (``storage.postgres_catalog.PostgresDocuments``)."""

from __future__ import annotations

import os
from typing import Protocol

from groupcoord.storage.fileio import OS_FILE_IO, FileIO


class MetadataDocuments(Protocol):
    """Documents by name: read whole, replaced whole (atomically)."""

    def read(self, name: str) -> bytes | None:
        """The document, or None if it was never written."""
        ...

    def write(self, name: str, body: bytes) -> None: ...

    def claim_block(self, name: str, first_id: int, size: int) -> int:
        """Claim ``size`` ids of the counter ``name``, none claimed before, the first at
        ``first_id`` or later; return the first. Durable before it returns."""
        ...


class FileDocuments:
    """Each document a file in ``data_dir``, replaced by an fsynced rename."""

    def __init__(self, data_dir: str, io: FileIO = OS_FILE_IO) -> None:
        self._data_dir = data_dir
        self._io = io

    def read(self, name: str) -> bytes | None:
        try:
            return self._io.read_bytes(os.path.join(self._data_dir, name))
        except FileNotFoundError:
            return None

    def write(self, name: str, body: bytes) -> None:
        self._io.replace_file(os.path.join(self._data_dir, name), body)

    def claim_block(self, name: str, first_id: int, size: int) -> int:
        """The counter is a file holding the next unclaimed id, as text (one process owns
        the data dir, so read-then-replace is atomic enough)."""
        stored = self.read(name)
        first = max(int(stored.decode("ascii").strip() or 0) if stored else 0, first_id)
        self.write(name, str(first + size).encode("ascii"))
        return first
