"""Per-group dynamic configs (`share.*`, set with IncrementalAlterConfigs on GROUP).

Kafka keeps group configs as ConfigRecords in the KRaft metadata log; this single node
keeps them in `<data dir>/group-configs.json`, rewritten atomically on every change
(write to a temporary file, fsync, rename), next to the topic metadata.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from groupcoord.storage.fileio import OS_FILE_IO, FileIO

FILE_NAME = "group-configs.json"


class GroupConfigStore:
    """group id -> {config name: value}; only explicitly set names are stored."""

    def __init__(self, data_dir: str, io: FileIO = OS_FILE_IO) -> None:
        self.path = os.path.join(data_dir, FILE_NAME)
        self.io = io
        self.configs: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        try:
            raw = json.loads(self.io.read_text(self.path))
        except FileNotFoundError:
            return
        self.configs = {g: {k: str(v) for k, v in c.items()} for g, c in raw.items()}

    def get(self, group_id: str) -> Mapping[str, str]:
        return self.configs.get(group_id, {})

    def set(self, group_id: str, changes: Mapping[str, str | None]) -> None:
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
        self.io.replace_file(self.path, json.dumps(self.configs, sort_keys=True).encode())
