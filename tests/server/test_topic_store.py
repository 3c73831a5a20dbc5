"""Topic metadata: ids from partition.metadata, configs in a small file, lazy internal topics."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.server.topics import TopicStore
from groupcoord.storage import LogManager


def _store(path: Path) -> tuple[LogManager, TopicStore]:
    logs = LogManager(str(path))
    logs.load_all()
    return logs, TopicStore(logs)


def test_topics_survive_reload(tmp_path: Path) -> None:
    logs, store = _store(tmp_path)
    t = store.create("orders", 3, {"retention.ms": "1000"})
    store.set_configs("orders", {"retention.ms": None, "cleanup.policy": "compact"})
    logs.close()
    logs, store = _store(tmp_path)
    again = store.get("orders")
    assert again is not None and again.topic_id == t.topic_id and again.num_partitions == 3
    assert again.configs == {"cleanup.policy": "compact"}
    assert store.by_id(t.topic_id) is again
    assert logs.config_for("orders").cleanup_policy == "compact"
    logs.close()


def test_internal_topic_partitions_are_created_lazily(tmp_path: Path) -> None:
    logs, store = _store(tmp_path)
    topic = store.ensure_internal("__consumer_offsets", 50, {"cleanup.policy": "compact"})
    assert topic.internal and not (tmp_path / "__consumer_offsets-7").exists()
    assert store.log("__consumer_offsets", 7) is not None
    assert (tmp_path / "__consumer_offsets-7").is_dir()
    assert store.log("__consumer_offsets", 50) is None
    logs.close()
    logs, store = _store(tmp_path)
    again = store.get("__consumer_offsets")
    assert again is not None and again.num_partitions == 50 and again.topic_id == topic.topic_id
    logs.close()


def test_delete_and_grow(tmp_path: Path) -> None:
    logs, store = _store(tmp_path)
    store.create("a", 1, {})
    store.add_partitions("a", 4)
    assert store.get("a").num_partitions == 4 and store.log("a", 3) is not None
    store.delete("a")
    assert store.get("a") is None and store.log("a", 0) is None
    logs.close()


def test_broker_compacts_compacted_topics(tmp_path: Path) -> None:
    import asyncio
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from broker_inproc import InProcBroker

    from groupcoord.logformat.batch import build_batch

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            broker = b.broker
            broker.topics.create("c", 1, {"cleanup.policy": "compact", "segment.bytes": "200"})
            for i in range(6):
                broker.append("c", 0, build_batch([(b"k", b"v%d" % i, (), 1000)]))
            plog = broker.topics.log("c", 0)
            before = sum(s.size for s in plog.segments)
            broker.compact_logs()
            assert sum(s.size for s in plog.segments) < before
            assert plog.log_end_offset == 6

    asyncio.run(go())


def test_topic_ids_follow_kafka_uuid_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Topic ids are `Uuid.randomUuid()`s: a draw whose text would contain "-" is redrawn."""
    draws = iter([b"\xf8" + bytes(15), bytes(range(16))])
    monkeypatch.setattr("groupcoord.server.topics.os.urandom", lambda n: next(draws))
    logs, store = _store(tmp_path)
    topic = store.create("ids", 1, {})
    assert topic.topic_id[:6] == bytes(range(6)) and topic.topic_id[6] >> 4 == 4
    logs.close()
