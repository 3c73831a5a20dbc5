"""Three groupcoord nodes on PostgreSQL under the cluster workload (helpers.cluster_workload),
with faults applied to the nodes and the run checked (helpers.cluster_checks): the failover
test, the CI-sized fault run and the longer run's script (bench/cluster_fault_run.py) all
drive a cluster through `ThreeNodes` and `fault_run`. The fault schedule is seeded: one seed,
the same faults at the same offsets into the run."""

from __future__ import annotations

import random
import signal
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from groupcoord.wire.errors import ErrorCode
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.cluster_checks import Recovery, Verdict, check, recovery_after
from helpers.cluster_workload import (
    ASK_TIMEOUT_S,
    EVENTS_PARTITIONS,
    EVENTS_TOPIC,
    TXN_PARTITIONS,
    TXN_TOPIC,
    Workload,
    WorkloadPlan,
    create_topics,
    now,
)
from helpers.confluent_io import high_watermarks
from helpers.polling import hold, wait_for
from helpers.postgres_cluster import (
    GROUP_KEY,
    SHORT_LEASE,
    TRANSACTION_KEY,
    broker_ids,
    coordinator,
    node_args,
    partition_leaders,
)
from helpers.postgres_server import DATABASE, PostgresServer

NODE_IDS = (1, 2, 3)
WAIT_S = 60.0


class FaultKind(Enum):
    KILL = "SIGKILL, restarted later"
    PAUSE = "SIGSTOP, SIGCONT later"
    RESTART = "SIGTERM and restarted"


@dataclass(frozen=True)
class Fault:
    at_s: float  # offset into the run
    kind: FaultKind
    node: int
    hold_s: float  # how long the node stays down or paused


def fault_schedule(seed: int, nodes: Sequence[int], duration_s: float) -> list[Fault]:
    """Random faults, one node at a time, over `duration_s`: each held 1-6 s (a pause past
    the lease makes the others take over and fences the paused node), 3-8 s apart."""
    rng = random.Random(seed)
    faults = []
    at = rng.uniform(3, 6)
    while at < duration_s:
        kind = rng.choice(list(FaultKind))
        hold = 0.0 if kind is FaultKind.RESTART else round(rng.uniform(1, 6), 2)
        faults.append(Fault(round(at, 2), kind, rng.choice(sorted(nodes)), hold))
        at += hold + rng.uniform(3, 8)
    return faults


class ThreeNodes:
    """Nodes 1-3 of one cluster, each a `serve --storage` subprocess with short leases."""

    def __init__(self, factory: BrokerFactory, storage_url: str) -> None:
        self.nodes = {n: factory.create(node_args(storage_url, n) + SHORT_LEASE, start=False)
                      for n in NODE_IDS}
        self.paused: set[int] = set()

    def start(self) -> None:
        for node in self.nodes.values():
            node.start(WAIT_S)  # a node opens every partition first: slow on a busy machine
        self.wait_healthy()

    @property
    def bootstrap(self) -> str:
        """Every node's address: clients reach whichever is up."""
        return ",".join(node.bootstrap for node in self.nodes.values())

    def answering(self) -> dict[int, BrokerProcess]:
        return {n: node for n, node in self.nodes.items()
                if node.is_running and n not in self.paused}

    def coordinator_of(self, key: str, key_type: int = TRANSACTION_KEY) -> int | None:
        """The coordinator's node id as the first answering node tells it (None: none knows)."""
        for node in self.answering().values():
            try:
                code, node_id = coordinator(node, key_type, key, ASK_TIMEOUT_S)
            except OSError:
                continue
            if code == ErrorCode.NONE:
                return node_id
        return None

    def wait_healthy(self) -> None:
        """Every node up, listing the three live nodes."""
        wait_for(lambda: len(self.answering()) == len(NODE_IDS) and all(
            broker_ids(node.bootstrap) == set(NODE_IDS) for node in self.nodes.values()),
            "every node to list the three live nodes", WAIT_S, interval=0.2)

    def wait_spread(self) -> dict[str, dict[int, int]]:
        """Once every node tells the same leaders for both topics, spread over the three
        nodes: topic -> partition -> leader."""
        seen: list[dict[str, dict[int, int]]] = []

        def agreed() -> bool:
            views = [{EVENTS_TOPIC: partition_leaders(node, EVENTS_TOPIC),
                      TXN_TOPIC: partition_leaders(node, TXN_TOPIC)}
                     for node in self.nodes.values()]
            seen[:] = views
            first = views[0]
            return (len(first[EVENTS_TOPIC]) == EVENTS_PARTITIONS
                    and len(first[TXN_TOPIC]) == TXN_PARTITIONS
                    and all(view == first for view in views)
                    and set(first[EVENTS_TOPIC].values()) == set(NODE_IDS)
                    and set(first[TXN_TOPIC].values()) == set(NODE_IDS))
        wait_for(agreed, "the partitions spread over the three nodes, every node agreeing",
                 WAIT_S, lambda: f"leaders per node {seen}", interval=0.2)
        return seen[0]

    def apply(self, fault: Fault) -> None:
        """The fault, held for its time; the node is back (running, resumed) on return."""
        node = self.nodes[fault.node]
        if fault.kind is FaultKind.KILL:
            node.kill()
            hold(fault.hold_s)
            node.start(WAIT_S)
        elif fault.kind is FaultKind.PAUSE:
            self.pause(fault.node)
            hold(fault.hold_s)
            self.resume(fault.node)
        else:
            node.restart(WAIT_S)

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def pause(self, node_id: int) -> None:
        proc = self.nodes[node_id].proc
        assert proc is not None
        proc.send_signal(signal.SIGSTOP)
        self.paused.add(node_id)

    def resume(self, node_id: int) -> None:
        proc = self.nodes[node_id].proc
        assert proc is not None
        proc.send_signal(signal.SIGCONT)
        self.paused.discard(node_id)

    def release(self) -> None:
        """Resume every paused node, so the factory can stop it."""
        for node_id in list(self.paused):
            self.resume(node_id)


GROUPS = {"classic-group": "classic", "consumer-group": "consumer"}


def group_named_for(coordinator_of: Callable[[str, int], int | None], prefix: str,
                    node_id: int) -> str:
    """A group name of `prefix` whose coordinator (as `coordinator_of` finds it) is
    `node_id`."""
    for i in range(200):
        if coordinator_of(f"{prefix}-{i}", GROUP_KEY) == node_id:
            return f"{prefix}-{i}"
    raise AssertionError(f"no {prefix} group coordinated by node {node_id}")


def kill_under_load(workload: Workload, kill: Callable[[], None]) -> Recovery:
    """With the workload working and transactions committing, `kill` a node; once the
    workload works again (a transaction committed too), how long each part took."""
    wait_working(workload, now(), "the workload to start working")
    wait_for(lambda: len(workload.transactions.log.committed_at) >= 3,
             "transactions to commit", WAIT_S, interval=0.1)
    killed_at = now()
    kill()
    wait_working(workload, killed_at, "the workload to work again after the kill")
    wait_for(lambda: any(t > killed_at for t in
                         list(workload.transactions.log.committed_at.values())),
             "a transaction to commit after the kill", WAIT_S, interval=0.1)
    return recovery_after(workload, killed_at)


def workload_for(cluster: ThreeNodes, groups: dict[str, str], seed: int) -> Workload:
    return Workload(WorkloadPlan(cluster.bootstrap, groups, cluster.coordinator_of, seed=seed))


def wait_working(workload: Workload, since: float, what: str) -> Recovery:
    """Until every partition took a record and every group committed on every partition
    after `since`, and is stable."""
    found: list[Recovery] = []

    def working() -> bool:
        found[:] = [recovery_after(workload, since)]
        recovery = found[0]
        return (recovery.produce_s is not None
                and all(s is not None for s in recovery.stable_s.values()))
    wait_for(working, what, WAIT_S, lambda: found[0].summary() if found else "", interval=0.1)
    return found[0]


def finish(bootstrap: str, workload: Workload) -> Verdict:
    """Stop producing, let every group reach the log ends, stop the workload and check it."""
    workload.stop_producing()
    ends = high_watermarks(bootstrap, EVENTS_TOPIC, EVENTS_PARTITIONS)
    wait_for(lambda: workload.caught_up(ends), "the groups to commit the log ends", WAIT_S,
             lambda: f"ends {ends}, last views "
                     f"{ {g: v[-1] for g, v in workload.watcher.views.items() if v} }",
             interval=0.2)
    workload.stop()
    return check(workload, bootstrap)


@dataclass
class FaultRun:
    seed: int
    faults: list[Fault]
    # Per fault: how long until the workload worked again (None: the next fault came first).
    recoveries: list[tuple[Fault, Recovery | None]] = field(default_factory=list)
    verdict: Verdict = field(default_factory=Verdict)


def fault_run(cluster: ThreeNodes, seed: int, duration_s: float,
              say: Callable[[str], None]) -> FaultRun:
    """The workload on the started cluster, the seeded faults applied one at a time over
    `duration_s`, then the cluster healed, the workload finished and checked."""
    run = FaultRun(seed, fault_schedule(seed, NODE_IDS, duration_s))
    create_topics(cluster.bootstrap)
    cluster.wait_spread()
    workload = workload_for(cluster, GROUPS, seed)
    workload.start()
    try:
        started = now()
        wait_working(workload, started, "the workload to start working")
        started = now()
        fault_times = []
        for fault in run.faults:
            hold(started + fault.at_s - now())
            fault_times.append(now())
            say(f"{fault.at_s:6.1f} s: node {fault.node} {fault.kind.value}"
                + (f" after {fault.hold_s} s" if fault.hold_s else ""))
            cluster.apply(fault)
        hold(started + duration_s - now())
        cluster.wait_healthy()
        healed = now()
        recovered = wait_working(workload, healed, "the workload to work again after the faults")
        say(f"healed; {recovered.summary()}")
        ends = [*fault_times[1:], healed]
        for fault, at, until in zip(run.faults, fault_times, ends, strict=True):
            recovery = recovery_after(workload, at)
            within = recovery.produce_s is not None and at + recovery.produce_s < until
            run.recoveries.append((fault, recovery if within else None))
        run.verdict = finish(cluster.bootstrap, workload)
    finally:
        workload.stop()
        cluster.release()
    return run


@contextmanager
def three_nodes_on_postgres(prefix: str) -> Iterator[ThreeNodes]:
    """A throwaway PostgreSQL and three started nodes on it, in a temporary directory named
    from `prefix` (the set-up of the cluster benches); all stopped afterwards."""
    server = PostgresServer()
    with tempfile.TemporaryDirectory(prefix=prefix) as work:
        factory = BrokerFactory(Path(work))
        try:
            server.start()
            cluster = ThreeNodes(factory, server.url_for(DATABASE))
            cluster.start()
            yield cluster
        finally:
            factory.close()
            server.stop()
