"""Static membership (KIP-345) with the Java client and confluent-kafka.

Three static members share a 12-partition topic. The host of one is SIGKILLed and a new
process with the same group.instance.id (and client.id, which Kafka keeps from the first
registration of a static member) starts within the session timeout: it must get the
same partitions back without a rebalance. The other members see no rebalance callback, the
coordinator logs no new rebalance (its `__group_events`), the generation stays the same (as
the Java client reports it), and nothing changes once the old member id's session timeout
has passed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import confluent_io
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.group_checks import describe, group_events, settle_problem, wait_settled
from helpers.group_members import Ledger, MemberLog, host_factory

pytestmark = pytest.mark.interop

PARTITIONS = 12
SESSION_TIMEOUT_S = 6.0


@pytest.fixture(scope="module")
def static_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    factory = BrokerFactory(tmp_path_factory.mktemp("static"),
                            ["--group-initial-rebalance-delay-ms", "0"])
    yield factory.create()
    factory.close()


def _rebalances(bootstrap: str, group: str) -> list[dict[str, object]]:
    return [e for e in group_events(bootstrap, group)
            if e["kind"] in ("rebalance_started", "rebalance_completed")]


@pytest.mark.parametrize("client", ["confluent", "java"])
def test_static_member_restart_keeps_assignment(
        client: str, static_broker: BrokerProcess, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    if client == "java":
        request.getfixturevalue("java_harness")
    bootstrap, topic, group = static_broker.bootstrap, f"static-{client}", f"static-{client}"
    confluent_io.create_topic(bootstrap, topic, PARTITIONS)
    ledger = Ledger()
    make = host_factory(client, bootstrap, topic, group, "range", tmp_path)
    pool, solo = make(ledger, "pool"), make(ledger, "solo")
    hosts = [pool, solo]
    try:
        pool.start(0, "i0")
        pool.start(1, "i1")
        solo.start(2, "i2")
        wait_settled(bootstrap, group, topic, PARTITIONS, ledger, {0, 1, 2})
        owned_before = ledger.owned()[2]
        callbacks_before = {m: n for m, n in ledger.callbacks().items() if m != 2}
        old_id = _member_id(bootstrap, group, "i2")
        rebalances_before = _rebalances(bootstrap, group)
        assert rebalances_before, "no rebalance events to compare with"

        # The replacement process is up before the kill, so the restart is the client's
        # own start-up and join, not the JVM's start-up on a busy machine.
        restarted = make(ledger, "restarted")
        hosts.append(restarted)
        killed_at = time.monotonic()
        solo.kill()
        old_log = ledger.forget(2)
        restarted.start(2, "i2")
        # Back within the session timeout: a later rejoin would have been a rebalance (the
        # member expelled), which the checks below find in the group's events. Timed from
        # here it would count this test's polling on a busy machine too.
        wait_settled(bootstrap, group, topic, PARTITIONS, ledger, {0, 1, 2})
        assert ledger.owned()[2] == owned_before
        assert _member_id(bootstrap, group, "i2") != old_id

        _hold_stable(bootstrap, group, topic, ledger, {0, 1, 2},
                     until=killed_at + SESSION_TIMEOUT_S + 1.5)
        assert {m: n for m, n in ledger.callbacks().items() if m != 2} \
            == callbacks_before, "other members were rebalanced"
        assert _rebalances(bootstrap, group) == rebalances_before
        if client == "java":
            _check_java_generation(ledger, old_log)
    finally:
        for host in hosts:
            host.close()


def _check_java_generation(ledger: Ledger, old_log: MemberLog | None) -> None:
    """The Java client reports its generation: the restarted member's equals the one the
    killed process had and the one the other members are in."""
    assert old_log is not None
    with ledger.lock:
        gens = {m: log.generations for m, log in ledger.members.items()}
    assert gens[2][-1] == old_log.generations[-1] == gens[0][-1], f"generations {gens}"


def _member_id(bootstrap: str, group: str, instance_id: str) -> str:
    members = describe(bootstrap, group)["members"]
    return next(m["member_id"] for m in members if m["instance_id"] == instance_id)


def _hold_stable(bootstrap: str, group: str, topic: str, ledger: Ledger, live: set[int],
                 until: float) -> None:
    """Keep checking the settled condition until `until` (monotonic): it must never break."""
    while time.monotonic() < until:
        problem = settle_problem(bootstrap, group, topic, PARTITIONS, ledger, live)
        assert problem is None, f"group changed after the static rejoin: {problem}"
        time.sleep(0.2)
