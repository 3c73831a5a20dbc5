"""Property: random acquire / acknowledge / release / lock-expiry sequences driven through
the share runtime and its `__share_group_state` shards (on the generic coordinator runtime),
with appends failing at random, leave memory equal to the state rebuilt from the written
log after every step (each failure having fail-stopped and reloaded its shard), and lose
no acknowledgement that was answered NONE. With a dead-letter queue (KIP-1191) the same
holds with ARCHIVING records and the DLQ writer's ARCHIVED writes (which fail at random
too), and in the end every record rejected with NONE is in the DLQ topic, no record twice."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker
from failing_append import FailingSeam, fails
from hypothesis import given, settings
from hypothesis import strategies as st
from share_state_support import (
    GROUP,
    TOPIC,
    Ack,
    durable_view,
    earliest,
    kept_as_acknowledged,
    make_topic,
    rebuilt,
    state_partition,
)

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.share.partition import RecordState
from groupcoord.coordinator.share.sessions import ShareSession
from groupcoord.logformat.batch import build_batch
from groupcoord.server.runtime.shard_task import ShardState
from groupcoord.wire.errors import ErrorCode

MEMBERS = ("a", "b", "c")
LOCK_MS = 30_000  # share.record.lock.duration.ms default

step = st.one_of(
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(1, 8)),
    # An acquired record by position (or any offset when none is acquired), ack type,
    # and whether its holder acks it (else member "a").
    st.tuples(st.just("ack"), st.integers(0, 40), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("advance"), st.integers(0, 2 * LOCK_MS)),
    st.tuples(st.just("produce"), st.integers(1, 5)),
)
DLQ = "dlq.property"


def dlq_offsets(broker: Any) -> list[int]:
    from groupcoord.coordinator.share.dlq import origin
    from groupcoord.logformat.batch import decode_records

    return [origin(rec.headers)[3]  # type: ignore[index]
            for view in broker.topics.log(DLQ, 0).iter_batches()
            for rec in decode_records(view)]


async def drive(data_dir: Path, steps: list[tuple[Any, str | None]], dlq: bool = False) -> None:
    clock = ManualClock()
    async with InProcBroker(data_dir, clock=clock) as b:
        shares = b.broker.shares
        topic = make_topic(b.broker, 5)
        earliest(b.broker)
        if dlq:
            b.broker.topics.create(DLQ, 1, {"errors.deadletterqueue.group.enable": "true"})
            shares.group_configs.set(GROUP, {"errors.deadletterqueue.topic.name": DLQ})
            shares.reconfigure(GROUP)
        seam = shares.state.append = FailingSeam(shares.state.runtime, OSError(28, "No space left on device"))
        sp = await shares.partition(GROUP, topic, 0)
        key, p = sp.key, state_partition(sp)
        acknowledged: set[int] = set()
        rejected: set[int] = set()
        for item, fail in steps:
            seam.fail_next = fail
            sp = shares.partitions[key]
            if item[0] == "fetch":
                try:
                    await shares.acquire(sp, TOPIC, item[1], item[2], 1 << 20)
                except ApiError as exc:
                    assert exc.code == ErrorCode.COORDINATOR_NOT_AVAILABLE
            elif item[0] == "ack":
                _, pick, kind, by_holder = item
                held = sorted(o for o, r in sp.records.items()
                              if r.state == RecordState.ACQUIRED)
                offset = held[pick % len(held)] if held else pick
                rec = sp.records.get(offset)
                member = rec.member_id if rec is not None and by_holder else "a"
                code = await shares.acknowledge(sp, TOPIC, member, [Ack(offset, offset, [kind])])
                assert code in (0, ErrorCode.INVALID_RECORD_STATE,
                                ErrorCode.COORDINATOR_NOT_AVAILABLE)
                if code == 0 and kind == 1:
                    acknowledged.add(offset)
                if code == 0 and kind == 3:
                    rejected.add(offset)
            elif item[0] == "leave":  # the member's session ends (final fetch, lost connection)
                await shares.release_session(ShareSession(GROUP, item[1], partitions={
                    (sp.topic_id, sp.partition): None}))
            elif item[0] == "advance":
                clock.advance(item[1])
                await shares.quiesce()  # a fired DLQ flush writes on the loop, in this step
            else:
                b.broker.append(TOPIC, 0, build_batch([(None, b"x", (), 0)] * item[1]), 0)
            seam.fail_next = None
            log_state = rebuilt(b.broker, p)
            live = shares.partitions[key]
            assert log_state.canonical()[key] == durable_view(live)
            assert log_state.canonical()[key] == shares.store.canonical()[key]
            assert all(r.state != RecordState.ACQUIRED or r.member_id
                       for r in live.records.values())
            # Every failed append fail-stopped the state shard, which reloaded through its
            # ShardTask and serves again.
            assert shares.state.reloads == seam.failed
            assert shares.state.runtime.shards[p].state is ShardState.ACTIVE
            assert shares.state.runtime.log_end_offset(p) == seam.acknowledged.get(p, 0)
        log_state = rebuilt(b.broker, p)
        for offset in acknowledged:
            assert kept_as_acknowledged(log_state, key, offset)
        if dlq:
            for _ in range(10):  # the DLQ writer's retries
                clock.advance(1_000)
                await shares.quiesce()
            live = shares.partitions[key]
            assert live.archiving() == []
            written = dlq_offsets(b.broker)
            assert len(written) == len(set(written)), written
            assert rejected <= set(written)
            assert rebuilt(b.broker, p).canonical()[key] == durable_view(live)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(step, fails), min_size=5, max_size=60))
def test_share_state_in_memory_is_a_replay_of_its_log(steps: list[tuple[Any, str | None]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(drive(Path(tmp), steps))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(step, fails), min_size=5, max_size=60))
def test_share_state_with_a_dlq_is_a_replay_of_its_log(steps: list[tuple[Any, str | None]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(drive(Path(tmp), steps, dlq=True))
