"""Property: random InitProducerId / AddPartitionsToTxn / EndTxn / timeout-abort /
expiration sequences driven through the transaction runtime and its `__transaction_state`
shards (on the generic coordinator runtime), with appends failing at random, leave memory
equal to the state replayed from the written log after every step (each failure having
fail-stopped and reloaded its shard, which is ACTIVE again), and every answer NONE is in the
log: the producer epoch handed out, the partition added, the Prepare*/Complete* of an ended
transaction."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker
from failing_append import FailingSeam, fails
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fail_stop_kinds import durable, replayed

from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.transactions.coordinator import TransactionCoordinator
from groupcoord.coordinator.transactions.state import S
from groupcoord.server.runtime.shard_task import ShardState
from groupcoord.wire.errors import ErrorCode as E

TIDS = ("txn-a", "txn-b", "txn-c")
TOPIC = "t"
TIMEOUT_MS = 60_000
EXPIRATION_MS = 200_000

step = st.one_of(
    st.tuples(st.just("init"), st.sampled_from(TIDS)),
    st.tuples(st.just("add"), st.sampled_from(TIDS), st.integers(0, 2)),
    st.tuples(st.just("end"), st.sampled_from(TIDS), st.booleans()),
    st.tuples(st.just("advance"), st.integers(0, 2 * TIMEOUT_MS)),
    st.tuples(st.just("abort_timed_out")),
    st.tuples(st.just("expire")),
)
OK_OR_RETRIABLE = {E.NONE, E.NOT_COORDINATOR, E.CONCURRENT_TRANSACTIONS,
                   E.PRODUCER_FENCED, E.INVALID_PRODUCER_ID_MAPPING, E.INVALID_TXN_STATE}


async def drive(data_dir: Path, steps: list[tuple[Any, str | None]]) -> None:
    clock = ManualClock()
    async with InProcBroker(data_dir, clock=clock,
                            extra={"transactional.id.expiration.ms": str(EXPIRATION_MS)}) as b:
        b.broker.topics.create(TOPIC, 3, {})
        txns = b.broker.transactions
        assert txns.timers.expiration_ms == EXPIRATION_MS
        runtime = txns.runtime
        seam = runtime.append = FailingSeam(runtime, OSError(5, "Input/output error"))
        producers: dict[str, tuple[int, int]] = {}
        partitions = sorted({txns.partition_for(tid) for tid in TIDS})

        def logged(tid: str) -> Any:
            shard = replayed(runtime, txns.partition_for(tid))
            assert isinstance(shard, TransactionCoordinator)
            return shard.txns.get(tid)

        for item, fail in steps:
            seam.fail_next = fail
            action = item[0]
            if action == "init":
                tid = item[1]
                reply = await txns.init_producer_id(tid, TIMEOUT_MS, None)
                assert reply.error in OK_OR_RETRIABLE, reply
                if reply.error == E.NONE:
                    producers[tid] = (reply.producer_id, reply.producer_epoch)
                    md = logged(tid)
                    assert (md.producer_id, md.producer_epoch) == producers[tid]
            elif action == "add" and item[1] in producers:
                tid, tp = item[1], (TOPIC, item[2])
                code = await txns.add_partitions(tid, *producers[tid], [tp])
                assert code in OK_OR_RETRIABLE, code
                if code == E.NONE:
                    md = logged(tid)
                    assert md.state == S.ONGOING and tp in md.partitions
            elif action == "end" and item[1] in producers:
                tid, commit = item[1], item[2]
                reply = await txns.end_txn(tid, *producers[tid], commit)
                assert reply.error in OK_OR_RETRIABLE, reply
                if reply.error == E.NONE:
                    wanted = ((S.PREPARE_COMMIT, S.COMPLETE_COMMIT) if commit
                              else (S.PREPARE_ABORT, S.COMPLETE_ABORT))
                    assert logged(tid).state in wanted
            elif action == "advance":
                clock.advance(item[1])
            elif action == "abort_timed_out":
                for tid in await txns.abort_timed_out(clock.now_ms()):
                    assert logged(tid).state in (S.PREPARE_ABORT, S.COMPLETE_ABORT)
            elif action == "expire":
                for tid in await txns.remove_expired(clock.now_ms()):
                    assert logged(tid) is None
            seam.fail_next = None
            for _ in range(20):  # let the marker writers run (no time passes)
                await asyncio.sleep(0)
            for p in partitions:
                task = runtime.shards.get(p)
                if task is None:
                    continue
                assert task.state is ShardState.ACTIVE
                live = task.shard
                assert isinstance(live, TransactionCoordinator)
                assert durable(live.txns) == durable(replayed(runtime, p).txns)
                assert runtime.log_end_offset(p) == seam.acknowledged.get(p, 0)
            # Every failed append fail-stopped its shard, which reloaded through its task.
            assert sum(t.reloads for t in runtime.shards.values()) == seam.failed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(step, fails), min_size=5, max_size=50))
def test_transaction_state_in_memory_is_a_replay_of_its_log(
        steps: list[tuple[Any, str | None]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(drive(Path(tmp), steps))
