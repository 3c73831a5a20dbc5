"""A rebalance storm of evictions, in virtual time: `analyze health` names the crashing member.

A broker with a manual clock and a data dir (`groupcoord.testing.KafkaBroker`): `storm-steady`
(librdkafka, 12 s session) consumes throughout; `storm-crasher` (librdkafka, 6 s session) joins,
gets its partition and is SIGKILLed, ``CRASHES`` times. Each time the test moves the broker's
clock past the crasher's session timeout (but not the steady member's, whose heartbeats keep
resetting it), so the coordinator evicts it at once instead of after 6 real seconds (the
virtual clock starts at the real time, so the coordinator's records and the producer's share
one time line, the coordinator's falling behind by what the evictions did not wait). The
health verdict must be a storm naming `storm-crasher`, how often it joined and left, and the
coordinator's reason (session timeout), never `storm-steady`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = [pytest.mark.interop]

pytest.importorskip("confluent_kafka")

from helpers.polling import wait_for

from groupcoord.cli.demo_clients import MemberProcess, SteadyProducer
from groupcoord.cli.demo_workload import Scenario
from groupcoord.testing import KafkaBroker

STEADY = Scenario(topic="evict-storm-t", group="evict-storm", partitions=2,
                  session_timeout_ms=12_000)
CRASHER = Scenario(topic=STEADY.topic, group=STEADY.group, partitions=2,
                   session_timeout_ms=6_000)
CRASHES = 3


def _wait(cond: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """The members report asynchronously, from their own processes."""
    wait_for(cond, what, timeout_s)


def _evictions(broker: KafkaBroker, log_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(STEADY.topic, 2, 1)])[STEADY.topic].result(timeout=30)
    producer = SteadyProducer(bootstrap, STEADY.topic, 40)
    producer.start()
    members: list[MemberProcess] = []
    with log_path.open("wb") as log:
        try:
            steady = MemberProcess("storm-steady", bootstrap, STEADY, 0.0,
                                   lambda _n, _p: None, log=log)
            members.append(steady)
            _wait(lambda: steady.assigned == [0, 1], "storm-steady to own both partitions")
            for _ in range(CRASHES):
                crasher = MemberProcess("storm-crasher", bootstrap, CRASHER, 0.0,
                                        lambda _n, _p: None, log=log)
                members.append(crasher)
                _wait(lambda c=crasher: bool(c.assigned)  # type: ignore[misc]
                      and steady.assigned is not None and len(steady.assigned) == 1,
                      "storm-crasher to get a partition")
                crasher.kill()
                # past the crasher's session, well within the steady member's
                broker.advance(CRASHER.session_timeout_ms + 100)
                _wait(lambda: steady.assigned == [0, 1],
                      "storm-steady to own both partitions after the eviction")
            producer.stop()
            assert not [m.name for m in members if m.failed()]
        finally:
            producer.stop()
            broker.stop()  # with storm-steady still a member
            for m in members:
                m.kill()


def test_eviction_storm_names_the_crashing_member(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # virtual time from now: the producer's records carry the real time
    broker = KafkaBroker(clock="manual", data_dir=data_dir, start_ms=int(time.time() * 1000))
    _evictions(broker.start(), tmp_path / "clients.log")
    done = subprocess.run([sys.executable, "-m", "groupcoord", "analyze", "health",
                           "--data-dir", str(data_dir), "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr  # the storm is a WARN
    (group,) = [g for g in json.loads(done.stdout)["groups"] if g["group"] == STEADY.group]
    assert group["status"] == "WARN" and group["members"] == ["storm-steady"]
    (storm,) = group["findings"]
    assert storm.startswith(f"rebalance storm: {2 * CRASHES + 1} rebalances in "), storm
    assert f"storm-crasher joined {CRASHES} times and left {CRASHES}" in storm, storm
    assert storm.endswith("(reasons given: storm-crasher: session timeout)"), storm
    assert "storm-steady joined" not in storm, storm
