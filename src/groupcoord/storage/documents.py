"""Small metadata documents the broker keeps whole and rewrites on every change (the topic
configs and dynamic broker configs of ``server.topics``): in the data dir beside the logs,
or in PostgreSQL with the cluster's logs (``storage.postgres_catalog.PostgresDocuments``)."""

from __future__ import annotations

import os
from typing import Protocol

from groupcoord.storage.fileio import FileIO


class MetadataDocuments(Protocol):
    """Documents by name: read whole, replaced whole (atomically)."""

    def read(self, name: str) -> bytes | None:
        """The document, or None if it was never written."""
        ...

    def write(self, name: str, body: bytes) -> None: ...


class FileDocuments:
    """Each document a file in ``data_dir``, replaced by an fsynced rename."""

    def __init__(self, data_dir: str, io: FileIO) -> None:
        self._data_dir = data_dir
        self._io = io

    def read(self, name: str) -> bytes | None:
        try:
            return self._io.read_bytes(os.path.join(self._data_dir, name))
        except FileNotFoundError:
            return None

    def write(self, name: str, body: bytes) -> None:
        self._io.replace_file(os.path.join(self._data_dir, name), body)
