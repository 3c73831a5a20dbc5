"""Redelivery through the share runtime and its state shards, on a manual clock: a released
or expired record is acquirable, and a parked fetch woken, as soon as the write that
releases it returns (the state shard's effects run right after its append, never on a later
turn), and one batch released until the delivery limit is redelivered whole, in halves,
then record by record. The in-process counterparts of the conformance scenarios
`test_share_fetch_acknowledge_and_redelivery` and
`test_redelivery_is_throttled_near_the_delivery_limit`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker, run, settle
from share_state_support import GROUP, TOPIC, Ack, earliest, make_topic

from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.share.partition import AckType, SharePartition

# Far beyond any test's run: a parked fetch that returns was woken, not timed out.
PARKED_S = 3600.0


async def acquire(shares: Any, sp: SharePartition,
                  member: str = "m1") -> list[tuple[int, int, int]]:
    _data, acquired = await shares.acquire(sp, TOPIC, member, 500, 1 << 20, False, 500)
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in acquired]


def parked_fetch(b: InProcBroker) -> asyncio.Future[None]:
    return asyncio.ensure_future(b.broker.waiters.wait([(TOPIC, 0)], PARKED_S))


def test_a_released_record_is_acquirable_when_its_acknowledgement_returns(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, clock=ManualClock()) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 3)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            assert await acquire(shares, sp) == [(0, 2, 1)]
            waiting = parked_fetch(b)
            await settle(lambda: b.broker.waiters.parked((TOPIC, 0)))
            assert await shares.acknowledge(sp, TOPIC, "m1", [
                Ack(0, 1, [AckType.ACCEPT]), Ack(2, 2, [AckType.RELEASE])]) == 0
            # Woken by the write's effect, before the acknowledgement returned: nothing is
            # left for a later turn to apply.
            assert not b.broker.waiters.parked((TOPIC, 0))
            assert await acquire(shares, sp) == [(2, 2, 2)]
            await settle(waiting.done)
            assert await shares.acknowledge(sp, TOPIC, "m1", [Ack(2, 2, [AckType.REJECT])]) == 0
            assert await acquire(shares, sp) == []
    run(go())


def test_an_expired_lock_wakes_the_parked_fetch_at_its_deadline(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 2)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            assert await acquire(shares, sp) == [(0, 1, 1)]
            assert await acquire(shares, sp, "m2") == []
            waiting = parked_fetch(b)
            await settle(lambda: b.broker.waiters.parked((TOPIC, 0)))
            clock.advance(sp.config.record_lock_duration_ms - 1)
            await settle(lambda: True)
            assert not waiting.done() and await acquire(shares, sp, "m2") == []
            clock.advance(1)  # the lock timer's drain writes the release and wakes the fetch
            await settle(lambda: not b.broker.waiters.parked((TOPIC, 0)))
            await settle(waiting.done)
            assert await acquire(shares, sp, "m2") == [(0, 1, 2)]
    run(go())


def test_a_batch_released_until_the_delivery_limit_is_throttled(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, clock=ManualClock()) as b:
            shares = b.broker.shares
            topic = make_topic(b.broker, 10)
            earliest(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            assert sp.config.delivery_count_limit == 5
            rounds = []
            for _attempt in range(5):
                held = []
                while runs := await acquire(shares, sp):
                    held.append(runs)
                rounds.append(held)
                assert await shares.acknowledge(sp, TOPIC, "m1", [
                    Ack(first, last, [AckType.RELEASE])
                    for runs in held for first, last, _count in runs]) == 0
            assert rounds == [
                [[(0, 9, 1)]], [[(0, 9, 2)]], [[(0, 9, 3)]],
                [[(0, 4, 4)], [(5, 9, 4)]],
                [[(offset, offset, 5)] for offset in range(10)]]
            assert await acquire(shares, sp) == []  # archived at the limit
    run(go())
