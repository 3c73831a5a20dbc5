"""Per-group dynamic configs (`share.*`, set with IncrementalAlterConfigs on GROUP).

Kafka keeps group configs as ConfigRecords in the KRaft metadata log; here they are one
metadata document, `group-configs.json` (`storage.documents`: a file in the data dir,
written to a temporary file, fsynced and renamed, or a row in PostgreSQL with `--storage`),
rewritten whole on every change, next to the topic metadata. In a cluster on PostgreSQL
every node's lease pass re-reads the document (`server.postgres_node`), so a config set
through one node reaches the coordinators on the others within a heartbeat interval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from groupcoord.storage.documents import MetadataDocuments

FILE_NAME = "group-configs.json"


class GroupConfigStore:
    """group id -> {config name: value}; only explicitly set names are stored."""

    def __init__(self, documents: MetadataDocuments) -> None:
        self._documents = documents
        self.configs: dict[str, dict[str, str]] = {}
        # Changes made through this broker: a document read before the latest is stale.
        self.writes = 0
        # The document `configs` was built from (None after a change made here): a lease
        # pass reading the same bytes again, as nearly every pass does, changes nothing.
        self._adopted: bytes | None = None

    def load(self) -> None:
        self._adopt(self._documents.read(FILE_NAME))

    def follow(self, stored: bytes | None, writes_before_read: int) -> None:
        """Take the document as read elsewhere (a lease pass, on its own session), unless
        this broker changed the configs since the read began: the read may predate that
        change, and the next one will not."""
        if writes_before_read == self.writes:
            self._adopt(stored)

    def _adopt(self, stored: bytes | None) -> None:
        if stored is not None and stored == self._adopted:
            return
        self._adopted = stored
        raw = {} if stored is None else json.loads(stored)
        self.configs = {g: {k: str(v) for k, v in c.items()} for g, c in raw.items()}

    def get(self, group_id: str) -> Mapping[str, str]:
        return self.configs.get(group_id, {})

    def set(self, group_id: str, changes: Mapping[str, str | None]) -> None:
        # Changed as stored (with what other nodes of a cluster set), rewritten whole.
        self.load()
        self.writes += 1
        self._adopted = None
        current = dict(self.configs.get(group_id, {}))
        for name, value in changes.items():
            if value is None:
                current.pop(name, None)
            else:
                current[name] = value
        if current:
            self.configs[group_id] = current
        else:
            self.configs.pop(group_id, None)
        self._save()

    def _save(self) -> None:
        self._documents.write(FILE_NAME, json.dumps(self.configs, sort_keys=True).encode())
