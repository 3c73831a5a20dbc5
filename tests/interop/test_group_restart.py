"""Classic groups across a broker restart (SIGTERM) and a crash (kill -9), with confluent-kafka.

Three members consume a 12-partition topic and commit. With the members still running the
broker is stopped (or killed) and started again on the same data dir. Afterwards:

- the committed offsets are exactly those from before;
- the group is back with the same member ids and assignments, and the members carry on
  without any rebalance callback: their heartbeats, which carry the old generation, are
  accepted, so the generation survived;
- records produced after the restart are consumed from the committed offsets: nothing is
  lost and nothing committed is read again;
- a member joining afterwards starts the generation after the one from before the restart.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import confluent_io
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.group_checks import (
    StreamProducer,
    check_delivery,
    committed,
    describe,
    group_events,
    wait_settled,
)
from helpers.group_members import Ledger, host_factory, wait_for

pytestmark = pytest.mark.interop

PARTITIONS = 12
LIVE = {0, 1, 2}


def _produce_and_drain(bootstrap: str, topic: str, ledger: Ledger, seconds: float
                       ) -> set[tuple[int, int]]:
    producer = StreamProducer(bootstrap, topic)
    producer.start()
    producer.halt.wait(seconds)
    acked = producer.finish()
    wait_for(lambda: acked <= ledger.processed(), "members to process the stream", 60)
    return acked


def _last_generation(bootstrap: str, group: str) -> int:
    done = [e for e in group_events(bootstrap, group) if e["kind"] == "rebalance_completed"]
    return int(done[-1]["generation"])


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_groups_survive_restart(how: str, broker_factory: BrokerFactory, tmp_path: Path) -> None:
    broker = broker_factory.create(["--group-initial-rebalance-delay-ms", "0"])
    topic = group = f"restart-{how}"
    confluent_io.create_topic(broker.bootstrap, topic, PARTITIONS)
    ledger = Ledger()
    pool = host_factory("confluent", broker.bootstrap, topic, group, "range", tmp_path)(
        ledger, "pool")
    try:
        for idx in sorted(LIVE):
            pool.start(idx)
        wait_settled(broker.bootstrap, group, topic, PARTITIONS, ledger, LIVE)
        acked = _produce_and_drain(broker.bootstrap, topic, ledger, 2.0)
        wait_for(lambda: _all_committed(broker.bootstrap, group, topic), "final commits", 30)
        offsets = committed(broker.bootstrap, group)
        before = describe(broker.bootstrap, group)
        generation = _last_generation(broker.bootstrap, group)
        callbacks = ledger.callbacks()

        _restart(broker, how)
        # The members reconnect on their own; the port may have changed only if taken.
        assert committed(broker.bootstrap, group) == offsets
        wait_settled(broker.bootstrap, group, topic, PARTITIONS, ledger, LIVE)
        after = describe(broker.bootstrap, group)
        assert _ids(after) == _ids(before)
        assert ledger.callbacks() == callbacks, "members were rebalanced by the restart"

        acked |= _produce_and_drain(broker.bootstrap, topic, ledger, 2.0)
        pool.start(3)
        wait_settled(broker.bootstrap, group, topic, PARTITIONS, ledger, LIVE | {3})
        assert _last_generation(broker.bootstrap, group) == generation + 1
        for idx in (3, 2, 1, 0):
            pool.leave(idx)
        wait_settled(broker.bootstrap, group, topic, PARTITIONS, ledger, set())
        counts = check_delivery(acked, ledger, victim=None)
        print(f"{how}: {counts}")
    finally:
        pool.close()


def _restart(broker: BrokerProcess, how: str) -> None:
    if how == "sigterm":
        assert broker.stop() == 0
    else:
        broker.kill()
    broker.start()


def _ids(desc: dict[str, object]) -> dict[str, list[object]]:
    members = desc["members"]
    assert isinstance(members, list)
    return {m["member_id"]: m["assignment"] for m in members}


def _all_committed(bootstrap: str, group: str, topic: str) -> bool:
    ends = confluent_io.high_watermarks(bootstrap, topic, PARTITIONS)
    offsets = committed(bootstrap, group)
    return all(offsets.get((topic, p), 0) == ends[p] for p in range(PARTITIONS) if ends[p])
