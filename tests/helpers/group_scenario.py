"""The membership scenario every client and assignor runs (tests/interop/test_classic_groups.py).

Over a 12-partition topic that is being produced to the whole time:

1. one member joins; then two more (3 members); then five more (8 members), the last of
   them in a host of its own;
2. that host is SIGKILLed: the member vanishes without LeaveGroup and the broker must
   evict it when its session times out;
3. the others leave gracefully one by one, down to one member;
4. production stops; the last member processes the rest and leaves, and the group is
   Empty with every partition committed at its high watermark.

After every membership change the group must settle (`group_checks.wait_settled`): each
partition owned by exactly one live member, callbacks and DescribeGroups agreeing. At the
end `check_delivery` proves no record was lost and duplicates come only from
uncommitted tails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from helpers import confluent_io
from helpers.group_checks import (
    StreamProducer,
    check_delivery,
    committed,
    wait_settled,
)
from helpers.group_members import HostFactory, Ledger, MemberHost, host_factory, wait_for

PARTITIONS = 12
SIZES = (1, 3, 8)
DRAIN_TIMEOUT_S = 60.0


@dataclass
class ScenarioReport:
    """Timings and counts, printed by the test for the record."""

    settle_s: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    commit_failures: list[str] = field(default_factory=list)


@dataclass
class _Run:
    bootstrap: str
    group: str
    topic: str
    ledger: Ledger
    report: ScenarioReport
    live: set[int] = field(default_factory=set)

    def settle(self, label: str) -> None:
        self.report.settle_s[label] = round(wait_settled(
            self.bootstrap, self.group, self.topic, PARTITIONS, self.ledger, self.live), 2)


def run_membership_scenario(bootstrap: str, client: str, assignor: str, tmp: Path
                            ) -> ScenarioReport:
    name = f"{client}-{assignor}"
    run = _Run(bootstrap, f"g-{name}", f"t-{name}", Ledger(), ScenarioReport())
    confluent_io.create_topic(bootstrap, run.topic, PARTITIONS)
    make = host_factory(client, bootstrap, run.topic, run.group, assignor, tmp)
    producer = StreamProducer(bootstrap, run.topic)
    producer.start()
    pool = make(run.ledger, "pool")
    hosts: list[MemberHost] = [pool]
    try:
        victim_host = _grow(run, make, pool, hosts)
        victim = max(run.live)
        victim_host.kill()
        run.live.discard(victim)
        run.settle(f"evicted m{victim}")
        for idx in sorted(run.live, reverse=True)[:-1]:
            pool.leave(idx)
            run.live.discard(idx)
            run.settle(f"m{idx} left")
        acked = producer.finish()
        wait_for(lambda: acked <= run.ledger.processed(), "the last member to drain",
                 DRAIN_TIMEOUT_S)
        last = min(run.live)
        pool.leave(last)
        run.live.clear()
        run.settle(f"m{last} left")
        _check_committed_at_end(run, bootstrap)
        run.report.counts = check_delivery(acked, run.ledger, victim)
        run.report.counts["acked"] = len(acked)
        run.report.commit_failures = [f"m{m}: {e}" for m, log in run.ledger.members.items()
                                      for e in log.commit_failures]
        return run.report
    finally:
        producer.halt.set()
        for host in hosts:
            host.close()


def _grow(run: _Run, make: HostFactory, pool: MemberHost, hosts: list[MemberHost]
          ) -> MemberHost:
    """Grow the group through SIZES; the last member gets its own host, returned."""
    victim_host = pool
    for size in SIZES:
        for idx in range(len(run.live), size):
            host = pool
            if idx == SIZES[-1] - 1:
                victim_host = host = make(run.ledger, "victim")
                hosts.append(host)
            host.start(idx)
            run.live.add(idx)
        run.settle(f"{size} joined")
    return victim_host


def _check_committed_at_end(run: _Run, bootstrap: str) -> None:
    """Every partition's committed offset is its high watermark: all was processed."""
    ends = confluent_io.high_watermarks(bootstrap, run.topic, PARTITIONS)
    offsets = committed(bootstrap, run.group)
    got = {p: offsets.get((run.topic, p)) for p in range(PARTITIONS)}
    want = {p: ends[p] for p in range(PARTITIONS) if ends[p] > 0}
    assert {p: o for p, o in got.items() if p in want} == want, \
        f"committed {got}, high watermarks {ends}"
