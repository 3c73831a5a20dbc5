"""`share.isolation.level=read_committed` on ShareFetch (KafkaApis passes the group's
isolation level to `SharePartitionManager`): records of aborted transactions are archived
and never delivered, and nothing at or past the last stable offset (an open transaction)
is acquired. read_uncommitted, the default, delivers everything."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_inproc import InProcBroker, RawClient, run
from test_api_transactions import _add, _batch, _end, _init, _produce, _topic
from test_share_apis import G, T, acquired, fetch, join, set_configs

from groupcoord.logformat.batch import build_batch


async def _txn(c: RawClient, tid: str, keys: list[bytes], commit: bool | None) -> None:
    """One transaction of one batch; `commit` None leaves it open."""
    got = await _init(c, tid)
    pid, epoch = got.producer_id, got.producer_epoch
    assert await _add(c, tid, pid, epoch, T, [0]) == {0: 0}
    assert (await _produce(c, T, _batch(keys, pid, epoch, 0), tid)).error_code == 0
    if commit is not None:
        assert (await _end(c, tid, pid, epoch, commit)).error_code == 0


async def _log(b: InProcBroker, c: RawClient) -> bytes:
    """Offsets: committed txn 0-4 (marker 5), aborted txn 6-10 (marker 11), plain 12-14,
    open txn 15-16."""
    await _topic(c, T)
    await _txn(c, "t-commit", [b"c%d" % i for i in range(5)], True)
    await _txn(c, "t-abort", [b"a%d" % i for i in range(5)], False)
    plain = build_batch([(None, b"p%d" % i, (), 0) for i in range(3)])
    assert (await _produce(c, T, plain, None)).error_code == 0
    await _txn(c, "t-open", [b"o0", b"o1"], None)
    return bytes(b.broker.topics.get(T).topic_id)


def test_read_committed_skips_aborted_and_stops_at_the_open_transaction(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            tid = await _log(b, c)
            await set_configs(c, G, share_auto_offset_reset="earliest",
                              share_isolation_level="read_committed")
            await join(c)
            resp = await fetch(c, tid, 0)
            assert acquired(resp) == [(0, 4, 1), (12, 14, 1)]
            # Acknowledge what was delivered: the aborted records are archived, so the
            # start offset moves up to the open transaction and nothing else comes.
            again = await fetch(c, tid, 1, acks=[(0, 4, [1]), (12, 14, [1])])
            assert acquired(again) == []
            sp = await b.broker.shares.partition(G, b.broker.topics.get(T), 0)
            assert sp.start_offset == 15
    run(go())


def test_read_uncommitted_delivers_aborted_records(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            tid = await _log(b, c)
            await set_configs(c, G, share_auto_offset_reset="earliest")
            await join(c)
            resp = await fetch(c, tid, 0)
            assert acquired(resp) == [(0, 4, 1), (6, 10, 1), (12, 16, 1)]
    run(go())
