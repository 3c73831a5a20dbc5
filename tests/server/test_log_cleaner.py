"""Compaction in the cleaner process: the same result as cleaning in place, and the broker
answers requests while it runs (the probe's latency under a 100 MB segment is measured by
`bench/bench_compaction.py`, not asserted here)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from broker_inproc import InProcBroker

from groupcoord.logformat.batch import build_batch, decode_records, validate
from groupcoord.storage.compaction import CLEANER_TMP, compact
from groupcoord.wire.generated import api_versions

TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "400000"}


def contents(plog: object) -> dict[int, tuple[bytes | None, bytes | None]]:
    out = {}
    for view in plog.iter_batches():  # type: ignore[attr-defined]
        header = validate(view)
        for rec in decode_records(view):
            out[header.base_offset + rec.offset_delta] = (rec.key, rec.value)
    return out


def fill(broker: object, topic: str, batches: int) -> None:
    for i in range(batches):
        rows = [(b"key-%d" % ((i * 10 + j) % 500), b"v" * 40, (), 1000 + i) for j in range(10)]
        broker.append(topic, 0, build_batch(rows))  # type: ignore[attr-defined]


def test_background_cleaning_equals_in_place_cleaning_and_serves_meanwhile(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path / "a") as node, InProcBroker(tmp_path / "b") as ref:
            for b in (node.broker, ref.broker):
                b.topics.create("c", 1, TOPIC_CONFIGS)
                fill(b, "c", 3_000)
            plog, ref_log = node.broker.topics.log("c", 0), ref.broker.topics.log("c", 0)
            assert len(plog.segments) > 3
            compact(ref_log, now_ms=10**13)
            client = await node.client()
            cleaning = asyncio.create_task(node.broker.compact_logs_in_background())
            answered = 0
            while not cleaning.done():
                resp = await client.call(api_versions.ApiVersionsRequest(), 0,
                                         api_versions.ApiVersionsResponse)
                assert resp.error_code == 0
                answered += 1
                fill(node.broker, "c", 1)  # appends go on while the cleaner works
                await asyncio.sleep(0)
            await cleaning
            assert answered > 1, "the loop was not serving while the cleaner ran"
            after = contents(plog)
            reference = contents(ref_log)
            cleaned_end = ref_log.segments[-1].base_offset
            assert {o: kv for o, kv in after.items() if o < cleaned_end} == \
                {o: kv for o, kv in reference.items() if o < cleaned_end}
            assert not os.path.exists(os.path.join(plog.path, CLEANER_TMP))

    asyncio.run(go())


def test_a_segment_changed_while_cleaning_is_left_alone(tmp_path: Path) -> None:
    from groupcoord.storage.compaction import apply_cleaned, plan_cleaning, run_clean_job

    async def go() -> None:
        async with InProcBroker(tmp_path) as node:
            node.broker.topics.create("c", 1, TOPIC_CONFIGS)
            fill(node.broker, "c", 2_000)
            plog = node.broker.topics.log("c", 0)
            job = plan_cleaning(plog, now_ms=10**13)
            outcome = run_clean_job(job)
            first = plog.segments[0].base_offset
            plog.delete_records_before(plog.segments[1].base_offset)  # retention meanwhile
            result = apply_cleaned(plog, job, outcome)
            assert first not in {s.base_offset for s in plog.segments}
            assert result.segments_cleaned == len(outcome.cleaned) - 1
            assert contents(plog)  # still readable, every batch valid

    asyncio.run(go())
