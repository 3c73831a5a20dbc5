"""SIGKILL of the node coordinating the groups, to the groups stable again: groupcoord's three
nodes on one PostgreSQL beside Apache Kafka 4.4 with three KRaft brokers (combined broker and
controller each, replication factor 3, min.insync.replicas 2), on this machine, under the same
workload (tests/helpers/cluster_workload.py: an acks=all producer, an idempotent one, a
transactional one, a classic and a consumer-protocol group of two members each).

Both run with the same failure detection: groupcoord's leases of 3 s renewed every 0.5 s, and
Kafka's broker.session.timeout.ms=3000 and broker.heartbeat.interval.ms=500 (the controller
fences a broker that missed its heartbeats that long, then elects new leaders). The victim is
the node coordinating the transactional id and both groups (the groups are named for it).

    python -m bench.bench_failover [--runs 3] [--systems groupcoord,kafka]

Per run: seconds from the SIGKILL until every partition acknowledged a record again, and until
each group committed on every partition and DescribeGroups said Stable with every partition
assigned; the checker's verdict too. Results go to bench/results/failover.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from bench.common import RESULTS_DIR, TESTS_DIR, free_port

if str(TESTS_DIR) not in sys.path:
    sys.path.append(str(TESTS_DIR))
from helpers.broker import BrokerFactory
from helpers.cluster_workload import (
    TRANSACTIONAL_ID,
    Workload,
    WorkloadPlan,
    create_topics,
    find_coordinator,
)
from helpers.fault_run import NODE_IDS, ThreeNodes, finish, group_named_for, kill_under_load
from helpers.kraft_node import KraftNode, Quorum
from helpers.polling import wait_for
from helpers.postgres_cluster import TRANSACTION_KEY, broker_ids
from helpers.postgres_server import DATABASE, PostgresServer

WAIT_S = 120.0
LEASE_MS, HEARTBEAT_MS = 3000, 500
KAFKA_HEAP = "-Xmx512m"
KAFKA_SETTINGS = {
    "broker.session.timeout.ms": str(LEASE_MS),
    "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
}


class Cluster(Protocol):
    """What a run needs of a cluster under test."""

    @property
    def bootstrap(self) -> str: ...

    def coordinator_of(self, key: str, key_type: int = TRANSACTION_KEY) -> int | None: ...

    def kill(self, node_id: int) -> None: ...


class KafkaThree:
    """Three Kafka 4.4 KRaft nodes, each broker and controller, one quorum."""

    def __init__(self, base_dir: Path) -> None:
        self.ports = {n: free_port() for n in NODE_IDS}
        controller_ports = {n: free_port() for n in NODE_IDS}
        quorum = Quorum.of(controller_ports)
        self.nodes = {n: KraftNode(base_dir / f"kafka{n}", self.ports[n], controller_ports[n],
                                   [KAFKA_HEAP],
                                   {"node.id": str(n),
                                    "controller.quorum.bootstrap.servers":
                                        quorum.bootstrap_servers(), **KAFKA_SETTINGS},
                                   log_file=base_dir / f"kafka{n}.log")
                      for n in NODE_IDS}
        for node in self.nodes.values():
            node.format(WAIT_S, quorum=quorum)
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.ports.values())

    def start(self) -> None:
        for n, node in self.nodes.items():
            self.procs[n] = subprocess.Popen(node.server_command(), stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL)
        wait_for(lambda: all(self._lists_three(port) for port in self.ports.values()),
                 "the three Kafka brokers to list each other", WAIT_S, interval=0.5)

    @staticmethod
    def _lists_three(port: int) -> bool:
        try:
            return broker_ids(f"127.0.0.1:{port}") == set(NODE_IDS)
        except Exception:  # noqa: BLE001 - not up yet
            return False

    def coordinator_of(self, key: str, key_type: int = TRANSACTION_KEY) -> int | None:
        for n, port in self.ports.items():
            if self.procs[n].poll() is None:
                found = find_coordinator("127.0.0.1", port, key, key_type)
                if found is not None:
                    return int(found.node_id)
        return None

    def kill(self, node_id: int) -> None:
        self.procs[node_id].kill()
        self.procs[node_id].wait()

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def failover_once(cluster: Cluster, replication: int, say: Callable[[str], None]) -> dict[str,
                                                                                           object]:
    """The workload running, the coordinating node SIGKILLed; the recovery and the verdict."""
    create_topics(cluster.bootstrap, replication)
    wait_for(lambda: cluster.coordinator_of(TRANSACTIONAL_ID) is not None,
             "a transaction coordinator", WAIT_S, interval=0.2)
    victim = cluster.coordinator_of(TRANSACTIONAL_ID)
    assert victim is not None
    groups = {group_named_for(cluster.coordinator_of, "classic", victim): "classic",
              group_named_for(cluster.coordinator_of, "consumer", victim): "consumer"}
    workload = Workload(WorkloadPlan(cluster.bootstrap, groups, cluster.coordinator_of))
    workload.start()
    try:
        recovery = kill_under_load(workload, lambda: cluster.kill(victim))
        say(f"  node {victim} killed: {recovery.summary()}")
        verdict = finish(cluster.bootstrap, workload)
    finally:
        workload.stop()
    say(f"  {verdict.summary()}")
    return {"victim": victim, "produce_resumed_s": recovery.produce_s,
            "commits_resumed_s": recovery.commits_s, "group_stable_s": recovery.stable_s,
            "violations": verdict.violations[:20]}


@contextmanager
def groupcoord_cluster(work: Path) -> Iterator[ThreeNodes]:
    server = PostgresServer()
    factory = BrokerFactory(work)
    try:
        server.start()
        cluster = ThreeNodes(factory, server.url_for(DATABASE))
        cluster.start()
        yield cluster
    finally:
        factory.close()
        server.stop()


@contextmanager
def kafka_cluster(work: Path) -> Iterator[KafkaThree]:
    cluster = KafkaThree(work)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


def _stable_worst(run: dict[str, object]) -> float | None:
    stable = run["group_stable_s"]
    assert isinstance(stable, dict)
    values = [v for v in stable.values() if v is not None]
    return max(values) if len(values) == len(stable) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_failover", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--systems", default="groupcoord,kafka")
    ns = parser.parse_args(argv)
    results: dict[str, list[dict[str, object]]] = {}
    for system in ns.systems.split(","):
        results[system] = []
        for run in range(ns.runs):
            print(f"{system} run {run + 1} of {ns.runs}", flush=True)
            with tempfile.TemporaryDirectory(prefix=f"failover-{system}-") as work:
                try:
                    if system == "groupcoord":
                        with groupcoord_cluster(Path(work)) as cluster:
                            results[system].append(failover_once(cluster, 1, print))
                    else:
                        with kafka_cluster(Path(work)) as kafka:
                            results[system].append(failover_once(kafka, 3, print))
                except AssertionError as exc:  # a wait that timed out: the run failed
                    print(f"  run failed: {str(exc)[:300]}")
                    results[system].append({"failed": str(exc)[:300]})
    summary = {}
    for system, all_runs in results.items():
        runs = [r for r in all_runs if "failed" not in r]
        worst = [w for w in (_stable_worst(r) for r in runs) if w is not None]
        produce = [float(str(r["produce_resumed_s"])) for r in runs
                   if r["produce_resumed_s"] is not None]
        summary[system] = {
            "runs": len(all_runs),
            "runs_failed": len(all_runs) - len(runs),
            "produce_resumed_s_median": round(statistics.median(produce), 2) if produce else None,
            "groups_stable_s_median": round(statistics.median(worst), 2) if worst else None,
            "groups_stable_s_max": round(max(worst), 2) if worst else None,
            "runs_with_violations": sum(1 for r in runs if r["violations"]),
        }
        print(f"{system}: {summary[system]}")
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "failover.json").write_text(json.dumps(
        {"lease_ms": LEASE_MS, "heartbeat_ms": HEARTBEAT_MS, "summary": summary,
         "runs": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
