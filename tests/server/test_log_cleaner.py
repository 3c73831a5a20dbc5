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
            # The replaced segment files were set aside and then removed off the loop.
            assert not [n for n in os.listdir(plog.path) if n.endswith(".deleted")]

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
            # Each swapped segment's old file waits beside it, for removal off the loop.
            assert sorted(result.replaced_files) == sorted(
                s.log_path + ".deleted" for s in plog.segments
                if s.base_offset in outcome.cleaned)
            assert all(os.path.exists(path) for path in result.replaced_files)
            await node.broker.cleaner.remove_replaced(result.replaced_files)
            assert not any(os.path.exists(path) for path in result.replaced_files)
            assert contents(plog)  # still readable, every batch valid

    asyncio.run(go())



def test_concurrent_cleaning_passes_take_turns(tmp_path: Path) -> None:
    """The maintenance loop's pass and a caller's pass at once: the second waits for the
    first (both would use `cleaner-tmp`), and the log ends cleaned and readable."""
    async def go() -> None:
        async with InProcBroker(tmp_path / "a") as node, InProcBroker(tmp_path / "b") as ref:
            for b in (node.broker, ref.broker):
                b.topics.create("c", 1, TOPIC_CONFIGS)
                fill(b, "c", 3_000)
            plog, ref_log = node.broker.topics.log("c", 0), ref.broker.topics.log("c", 0)
            compact(ref_log, now_ms=10**13)
            cleaner = node.broker.cleaner
            assert cleaner is not None
            clean, in_flight, most = cleaner.clean, [0], [0]

            async def counting_clean(job: object) -> object:
                in_flight[0] += 1
                most[0] = max(most[0], in_flight[0])
                try:
                    return await clean(job)  # type: ignore[arg-type]
                finally:
                    in_flight[0] -= 1

            cleaner.clean = counting_clean  # type: ignore[method-assign]
            first = asyncio.create_task(node.broker.compact_logs_in_background())
            await asyncio.sleep(0)  # the first pass has planned and started its cleaner
            node.broker._compacted.clear()  # so the second pass finds the log due as well
            await asyncio.gather(first, node.broker.compact_logs_in_background())
            assert most[0] == 1
            cleaned_end = ref_log.segments[-1].base_offset
            after = {o: kv for o, kv in contents(plog).items() if o < cleaned_end}
            assert after == {o: kv for o, kv in contents(ref_log).items() if o < cleaned_end}

    asyncio.run(go())
