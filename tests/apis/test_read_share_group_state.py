"""ReadShareGroupState (API 84) over the wire against an in-process broker: the live window of
a loaded share-partition (acquired records included), the persisted state after a restart,
uninitialized keys, and the per-partition errors of `ShareCoordinatorShard.readState`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_inproc import InProcBroker, RawClient, run
from test_share_apis import G, ack, fetch, join, set_configs, setup

from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import api_versions as av
from groupcoord.wire.generated import read_share_group_state as rs

AVAILABLE, ACQUIRED = 0, 1


async def read(c: RawClient, group: str, topic_id: bytes, partitions: list[int]) -> Any:
    req = rs.ReadShareGroupStateRequest(group_id=group, topics=[
        rs.ReadStateData(topic_id=topic_id, partitions=[
            rs.PartitionData(partition=p, leader_epoch=-1) for p in partitions])])
    return await c.call(req, 0, rs.ReadShareGroupStateResponse)


def batches(result: Any) -> list[tuple[int, int, int, int]]:
    return [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in result.state_batches]


async def acquire_and_ack(b: InProcBroker) -> tuple[RawClient, bytes]:
    """Acquire offsets 0-9; accept 0-2, reject 3, release 4; 5-9 stay acquired."""
    tid = setup(b)
    c = await b.client()
    await set_configs(c, G, share_auto_offset_reset="earliest")
    await join(c)
    await fetch(c, tid, 0)
    await ack(c, tid, 1, [(0, 2, [1]), (3, 3, [3]), (4, 4, [2])])
    return c, tid


def test_live_window_includes_acquired_records(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c, tid = await acquire_and_ack(b)
            resp = await read(c, G, tid, [0])
            assert [bytes(r.topic_id) for r in resp.results] == [tid]
            part = resp.results[0].partitions[0]
            assert (part.partition, part.error_code, part.state_epoch, part.start_offset) == (
                0, 0, 0, 4)
            assert batches(part) == [(4, 4, AVAILABLE, 1), (5, 9, ACQUIRED, 1)]
    run(go())


def test_persisted_state_after_restart(tmp_path: Path) -> None:
    async def first() -> bytes:
        async with InProcBroker(tmp_path) as b:
            _c, tid = await acquire_and_ack(b)
            return tid

    async def second(tid: bytes) -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            part = (await read(c, G, tid, [0])).results[0].partitions[0]
            # Not loaded: the persisted state, where the clean shutdown released 5-9.
            assert (part.error_code, part.start_offset) == (0, 4)
            assert batches(part) == [(4, 9, AVAILABLE, 1)]
    run(second(run(first())))


def test_uninitialized_key_and_errors(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c, tid = await acquire_and_ack(b)
            other = (await read(c, "no-state", tid, [0])).results[0].partitions[0]
            assert (other.error_code, other.state_epoch, other.start_offset, batches(other)) \
                == (0, 0, -1, [])
            parts = (await read(c, G, tid, [-1, 5])).results[0].partitions
            assert [(p.partition, p.error_code) for p in parts] == [
                (-1, ErrorCode.INVALID_REQUEST), (5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
            unknown = (await read(c, G, b"\x01" * 16, [0])).results[0].partitions[0]
            assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert (await read(c, "", tid, [0])).results == []
    run(go())


def test_advertised_in_api_versions(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            resp = await c.call(av.ApiVersionsRequest(), 2, av.ApiVersionsResponse)
            keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            assert keys[84] == (0, 0)
    run(go())
