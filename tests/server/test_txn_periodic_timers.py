"""The transaction coordinator's periodic passes (`transaction-abort`, every
`transaction.abort.timed.out.transaction.cleanup.interval.ms`, and
`transactionalId-expiration`, every
`transaction.remove.expired.transaction.cleanup.interval.ms`) are keyed timers of each
`__transaction_state` shard: armed when the shard loads, re-armed by each run, dropped
when the shard is unloaded, so a resigned shard aborts and expires nothing and a shard
taken again starts them anew."""

from __future__ import annotations

from pathlib import Path

from broker_inproc import InProcBroker, run, settle

from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.transactions.coordinator import ABORT_TIMER, EXPIRATION_TIMER
from groupcoord.coordinator.transactions.state import S
from groupcoord.server.runtime.shard_task import ShardState
from groupcoord.wire.errors import ErrorCode as E

TID = "periodic-txn"
ABORT_EVERY_MS = 10_000
EXPIRE_EVERY_MS = 50_000
EXPIRATION_MS = 100_000
EXTRA = {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(ABORT_EVERY_MS),
    "transaction.remove.expired.transaction.cleanup.interval.ms": str(EXPIRE_EVERY_MS),
    "transactional.id.expiration.ms": str(EXPIRATION_MS),
}


def test_periodic_passes_run_only_while_the_shard_is_loaded(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock, extra=EXTRA) as b:
            txns = b.broker.transactions
            p = txns.partition_for(TID)
            init = await txns.init_producer_id(TID, 1_000, None)
            assert init.error == E.NONE
            task = txns.runtime.shards[p]
            start = clock.now_ms()
            assert task.timers[ABORT_TIMER][2] == start + ABORT_EVERY_MS
            assert task.timers[EXPIRATION_TIMER][2] == start + EXPIRE_EVERY_MS
            pid, epoch = init.producer_id, init.producer_epoch
            assert await txns.add_partitions(TID, pid, epoch, [("gone", 0)]) == E.NONE

            txns.runtime.unload(p)  # resigned: its timers go with it
            # (The group runtime's snapshot loop keeps its own timer on the clock.)
            assert task.timers == {}
            assert not {start + ABORT_EVERY_MS, start + EXPIRE_EVERY_MS} & set(clock.pending())
            clock.advance(2 * EXPIRATION_MS)  # far past the timeout: nothing runs

            task = txns.runtime.load(p)
            await settle(lambda: task.state is ShardState.ACTIVE, turns=100_000)
            md = txns.metadata(TID)
            assert md is not None and md.state == S.ONGOING  # left to the timer, as Kafka
            loaded = clock.now_ms()
            assert task.timers[ABORT_TIMER][2] == loaded + ABORT_EVERY_MS
            assert task.timers[EXPIRATION_TIMER][2] == loaded + EXPIRE_EVERY_MS

            clock.advance(ABORT_EVERY_MS - 1)
            await settle(lambda: task.queue.empty())
            assert txns.metadata(TID).state == S.ONGOING  # type: ignore[union-attr]
            clock.advance(1)  # the abort pass fences and aborts; its markers complete it
            await settle(lambda: txns.metadata(TID).state == S.COMPLETE_ABORT)  # type: ignore[union-attr]
            assert txns.metadata(TID).producer_epoch == epoch + 1  # type: ignore[union-attr]
            assert task.timers[ABORT_TIMER][2] == loaded + 2 * ABORT_EVERY_MS

            # Idle since the abort (at +10 s): the pass at +150 s is the first to find it
            # idle longer than EXPIRATION_MS, and tombstones it.
            for step in (1, 2):
                clock.advance_to(loaded + step * EXPIRE_EVERY_MS)
                await settle(lambda step=step: task.timers[EXPIRATION_TIMER][2]
                             == loaded + (step + 1) * EXPIRE_EVERY_MS)
                assert txns.metadata(TID) is not None
            clock.advance_to(loaded + 3 * EXPIRE_EVERY_MS)
            await settle(lambda: txns.metadata(TID) is None)
            assert task.timers[EXPIRATION_TIMER][2] == loaded + 4 * EXPIRE_EVERY_MS
    run(go())
