"""Topic metadata: names, topic ids, partition counts and per-topic configs.

Mirrors the part of Kafka's `MetadataCache` + `TopicsImage` a single node needs. The
partition directory (`LogManager`: its partitions and their `partition.metadata`; on
PostgreSQL the cluster's topic catalog) is the truth for which topics exist and their ids;
topic config overrides and the ids of internal topics whose partitions are created lazily
live in one small JSON document, `topic-configs.json` (a file in the data dir, or a row in
PostgreSQL: `storage.documents`), written atomically on every change, together with the
dynamic broker configs (IncrementalAlterConfigs on the BROKER resource).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from groupcoord.apis.topic_configs import log_overrides
from groupcoord.logformat.internal_topics import (
    KAFKA_INTERNAL_TOPICS,
)
from groupcoord.wire.kafka_uuid import random_uuid

if TYPE_CHECKING:
    from groupcoord.storage import LogManager, PartitionLog

CONFIG_FILE = "topic-configs.json"


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: bytes
    num_partitions: int
    internal: bool = False
    configs: dict[str, str] = field(default_factory=dict)


class PersistedConfigs(dict[str, str]):
    """Dynamic broker configs: a dict that saves the store whenever it changes."""

    def __init__(self, values: dict[str, str], save: Callable[[], None]) -> None:
        super().__init__(values)
        self._save = save

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(key, value)
        self._save()

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._save()

    def pop(self, key: str, *default: Any) -> Any:
        value = super().pop(key, *default)
        self._save()
        return value


class TopicStore:
    """The broker's topics (and dynamic broker configs), backed by the `LogManager` and its
    `topic-configs.json` document."""

    def __init__(self, logs: LogManager) -> None:
        self._logs = logs
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[bytes, Topic] = {}
        self.broker_configs = PersistedConfigs({}, self._save)
        # Called after topics are created, deleted or grow (the group coordinator's
        # topics image follows them).
        self.listeners: list[Callable[[], None]] = []
        self._load()

    def _changed(self) -> None:
        for listener in self.listeners:
            listener()

    def _load(self) -> None:
        stored = self._logs.documents.read(CONFIG_FILE)
        data: dict[str, Any] = {} if stored is None else json.loads(stored)
        saved: dict[str, dict[str, Any]] = data.get("topics", {})
        dict.update(self.broker_configs, data.get("broker", {}))
        for name, info in self._logs.topics().items():
            entry = saved.get(name, {})
            topic_id = info.topic_id or bytes.fromhex(entry.get("id", "")) or random_uuid(os.urandom)
            count = max(info.partitions, int(entry.get("partitions", 0)))
            self._add(Topic(name, topic_id, count, name in KAFKA_INTERNAL_TOPICS,
                            dict(entry.get("configs", {}))))
        for name, entry in saved.items():
            if name not in self._topics and entry.get("lazy"):
                self._add(Topic(name, bytes.fromhex(entry["id"]), int(entry["partitions"]),
                                name in KAFKA_INTERNAL_TOPICS, dict(entry.get("configs", {}))))
        for topic in self._topics.values():
            if topic.configs:
                self._logs.topic_configs[topic.name] = log_overrides(topic.configs)

    def _add(self, topic: Topic) -> None:
        self._topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic

    def _save(self) -> None:
        data = {"topics": {
            t.name: {"id": t.topic_id.hex(), "partitions": t.num_partitions,
                     "configs": t.configs, "lazy": t.internal}
            for t in self._topics.values() if t.configs or t.internal
        }, "broker": dict(self.broker_configs)}
        self._logs.documents.write(
            CONFIG_FILE, json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))

    # -- reads -----------------------------------------------------------------------------

    def get(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def by_id(self, topic_id: bytes) -> Topic | None:
        return self._by_id.get(topic_id)

    def all(self) -> list[Topic]:
        return list(self._topics.values())

    def log(self, name: str, partition: int) -> PartitionLog | None:
        """The partition's log; partitions of lazily created topics are opened on first use."""
        plog = self._logs.get(name, partition)
        if plog is not None:
            return plog
        topic = self._topics.get(name)
        if topic is None or not 0 <= partition < topic.num_partitions:
            return None
        return self._logs.get_or_create(name, partition, topic.topic_id)

    # -- changes ---------------------------------------------------------------------------

    def create(self, name: str, num_partitions: int, configs: dict[str, str],
               lazy: bool = False) -> Topic:
        """Create a topic; `lazy` (internal topics) defers the partition directories."""
        topic = Topic(name, random_uuid(os.urandom), num_partitions,
                      lazy or name in KAFKA_INTERNAL_TOPICS, dict(configs))
        self._logs.topic_configs[name] = log_overrides(topic.configs)
        self._add(topic)
        if not lazy:
            for partition in range(num_partitions):
                self._logs.get_or_create(name, partition, topic.topic_id)
        if topic.configs or topic.internal:
            self._save()
        self._changed()
        return topic

    def adopt(self, name: str, topic_id: bytes, num_partitions: int) -> bool:
        """A topic another node of the cluster created or grew (the catalog has it): known
        here from now on, with no config overrides of its own; whether anything changed.
        Its partitions open on first use (`log`)."""
        topic = self._topics.get(name)
        if topic is None:
            self._add(Topic(name, topic_id, num_partitions, name in KAFKA_INTERNAL_TOPICS))
        elif topic.num_partitions < num_partitions:
            topic.num_partitions = num_partitions
        else:
            return False
        self._changed()
        return True

    def ensure_internal(self, name: str, num_partitions: int, configs: dict[str, str]) -> Topic:
        topic = self._topics.get(name)
        if topic is None:
            return self.create(name, num_partitions, configs, lazy=True)
        return topic

    def delete(self, name: str) -> None:
        topic = self._topics.pop(name, None)
        if topic is None:
            return
        self._by_id.pop(topic.topic_id, None)
        self._logs.delete_topic(name)
        self._save()
        self._changed()

    def add_partitions(self, name: str, total: int) -> None:
        topic = self._topics[name]
        for partition in range(topic.num_partitions, total):
            self._logs.get_or_create(name, partition, topic.topic_id)
        topic.num_partitions = total
        if topic.configs or topic.internal:
            self._save()
        self._changed()

    def delete_records(self, name: str, partition: int, offset: int) -> int:
        """DeleteRecords: advance the log start offset and checkpoint it; the new start."""
        plog = self.log(name, partition)
        if plog is None:
            raise KeyError((name, partition))
        start = plog.delete_records_before(offset)
        self._logs.checkpoint()
        return int(start)

    def set_configs(self, name: str, changes: dict[str, str | None]) -> None:
        """Apply overrides (None removes one) and persist them."""
        topic = self._topics[name]
        for key, value in changes.items():
            if value is None:
                topic.configs.pop(key, None)
            else:
                topic.configs[key] = value
        self._logs.set_topic_config(name, log_overrides(topic.configs))
        self._save()
