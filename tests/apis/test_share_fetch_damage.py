"""ShareFetch over damaged stored bytes (the scenario of `helpers.damaged_segment`, written
in-process): a share consumer acquires every intact record before the damaged batch, then
the partition is answered CORRUPT_MESSAGE, as Fetch answers it, and nothing is acquired
from the damage on."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_inproc import InProcBroker, run
from helpers import damaged_segment as scenario
from test_share_apis import G, T, acquired, fetch, join, set_configs

from groupcoord.logformat.batch import build_batch
from groupcoord.wire.errors import ErrorCode


async def _write_log(tmp_path: Path) -> bytes:
    """The scenario's batches appended and the broker stopped cleanly; the topic id."""
    async with InProcBroker(tmp_path) as b:
        topic = b.broker.topics.create(T, 1, dict(scenario.TOPIC_CONFIG))
        for n in range(scenario.BATCHES):
            first = n * scenario.PER_BATCH
            b.broker.append(T, 0, build_batch([
                (None, scenario.value_of(first + i), (), 0)
                for i in range(scenario.PER_BATCH)]), 0)
        return bytes(topic.topic_id)


def test_share_fetch_answers_corrupt_message_at_a_damaged_batch(tmp_path: Path) -> None:
    tid = run(_write_log(tmp_path))
    scenario.damage(tmp_path / f"{T}-0")

    async def consume() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            assert (await set_configs(c, G, share_auto_offset_reset="earliest")
                    ).error_code == 0
            assert (await join(c)).error_code == 0
            epoch, offsets, acks = 0, [], []
            while True:
                resp = await fetch(c, tid, epoch, acks=acks)
                epoch += 1
                assert resp.error_code == 0
                part = resp.responses[0].partitions[0]
                assert part.acknowledge_error_code == 0
                if part.error_code:
                    break
                got = acquired(resp)
                assert got, f"no progress after offset {offsets[-1] if offsets else None}"
                offsets += [o for first, last, _ in got for o in range(first, last + 1)]
                acks = [(first, last, [1]) for first, last, _ in got]
            assert part.error_code == ErrorCode.CORRUPT_MESSAGE
            assert not part.acquired_records and not part.records
            assert offsets == list(range(scenario.DAMAGED_OFFSET))
            # The damage is not skipped: the next fetch meets it again.
            again = (await fetch(c, tid, epoch)).responses[0].partitions[0]
            assert again.error_code == ErrorCode.CORRUPT_MESSAGE
            assert not again.acquired_records
    run(consume())
