"""The coordinator runtime refuses a write the log cannot take without failing the shard:
records whose values their record version cannot hold, or a batch over the partition's
max.message.bytes, fail that operation with UNKNOWN_SERVER_ERROR (Kafka's
RecordTooLargeException mapping); nothing is appended or replayed, the shard object is the
same afterwards and serves the next operation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run
from request_fields_support import error_log

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.records import offset_commit_record
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import Shard
from groupcoord.server.runtime.coordinator_runtime import OFFSETS_TOPIC, CoordinatorRuntime
from groupcoord.wire.errors import ErrorCode as E


class RecordingShard(Shard):
    """Replays offset commits; loads are counted, so a reload would show."""

    loads = 0

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.replayed: list[Any] = []

    def replay(self, record: Any, offset: int = -1, producer_id: int = -1,
               producer_epoch: int = -1) -> None:
        self.replayed.append(record.key)

    def on_loaded(self, now_ms: int) -> Result:
        RecordingShard.loads += 1
        return Result()

    def commit(self, group: str, metadata: str, count: int, now_ms: int) -> Result:
        records = [offset_commit_record(group, "t", p, 1, -1, metadata, now_ms, -1, bytes(16))
                   for p in range(count)]
        return Result(records=records, response="committed")


@pytest.mark.parametrize(("group", "metadata", "count"), [
    ("g" * 40_000, "", 1),           # the key's int16 group length cannot hold it
    ("g", "m" * 30_000, 40),         # 1.2 MB: over max.message.bytes (1,048,588)
], ids=["unencodable", "too-large"])
def test_refused_write_fails_only_its_operation(tmp_path: Path, group: str, metadata: str,
                                                count: int) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            RecordingShard.loads = 0
            runtime = CoordinatorRuntime(b.broker, shard_factory=RecordingShard)
            await runtime.start()
            partition = runtime.partition_for(group)
            with pytest.raises(ApiError) as refused:
                await runtime.call_shard(partition, lambda s, c, n: s.commit(group, metadata,
                                                                             count, n))
            assert refused.value.code == E.UNKNOWN_SERVER_ERROR
            shard = runtime.shards[partition].shard
            assert shard.replayed == []
            assert b.broker.topics.log(OFFSETS_TOPIC, partition).log_end_offset == 0
            ok = await runtime.call_shard(partition, lambda s, c, n: s.commit("g2", "", 1, n))
            assert ok == "committed"
            assert runtime.shards[partition].shard is shard and RecordingShard.loads == 1
            assert b.broker.topics.log(OFFSETS_TOPIC, partition).log_end_offset == 1
            await runtime.stop()

    with error_log() as errors:
        run(go())
    assert errors.messages == []
