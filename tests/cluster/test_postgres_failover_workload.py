"""Failover under load: three groupcoord nodes on PostgreSQL serve producers (acks=all plain,
idempotent, transactional) and consumer groups (classic, consumer protocol) while the node
that coordinates the groups and the transactions, and leads a third of the partitions, is
SIGKILLed. Service resumes within the lease and one heartbeat interval (plus the clients'
own retry delays), and the checker finds nothing acknowledged lost or stored twice, no
committed offset moving back, no partition owned by two consumer-protocol members at once and
no transaction seen in part by a read_committed reader.

Transactions complete only where their coordinator and partition leader are one node (markers
are not yet sent between nodes), so the transactional producer picks such a partition before
each transaction; share groups (which need their leader and share coordinator on one node)
are not part of the workload yet."""

from __future__ import annotations

import pytest
from helpers.broker import BrokerFactory
from helpers.cluster_workload import (
    EVENTS_TOPIC,
    TRANSACTIONAL_ID,
    create_topics,
)
from helpers.fault_run import (
    ThreeNodes,
    finish,
    group_named_for,
    kill_under_load,
    workload_for,
)

pytestmark = pytest.mark.timeout(300)

# helpers.postgres_cluster.SHORT_LEASE's lease and heartbeat interval.
LEASE_S, HEARTBEAT_S = 3.0, 0.5
# Past lease + heartbeat, the clients' own delays before they use the new leader and
# coordinator: librdkafka backs a failed request off up to retry.backoff.max.ms (1 s) and
# asks for the coordinator again at most once a second; a member's next commit comes
# COMMIT_INTERVAL_S (0.25 s) later and the watcher's next look WATCH_INTERVAL_S (0.25 s)
# after that; and one more second for scheduling on a loaded two-core machine.
CLIENT_SLACK_S = 1.0 + 1.0 + 0.25 + 0.25 + 1.0


def test_failover_under_load_keeps_every_promise(broker_factory: BrokerFactory,
                                                 storage_url: str) -> None:
    cluster = ThreeNodes(broker_factory, storage_url)
    cluster.start()
    create_topics(cluster.bootstrap)
    leaders = cluster.wait_spread()
    victim = cluster.coordinator_of(TRANSACTIONAL_ID)
    assert victim is not None
    groups = {group_named_for(cluster.coordinator_of, "classic", victim): "classic",
              group_named_for(cluster.coordinator_of, "consumer", victim): "consumer"}
    victim_partitions = [p for p, n in leaders[EVENTS_TOPIC].items() if n == victim]
    assert victim_partitions

    workload = workload_for(cluster, groups, seed=1)
    workload.start()
    try:
        recovery = kill_under_load(workload, lambda: cluster.kill(victim))
        print(f"\nafter SIGKILL of node {victim} (lease {LEASE_S} s, heartbeat "
              f"{HEARTBEAT_S} s): {recovery.summary()}")
        verdict = finish(cluster.bootstrap, workload)
    finally:
        workload.stop()
    print(verdict.summary())
    assert verdict.violations == []
    bound = LEASE_S + HEARTBEAT_S + CLIENT_SLACK_S
    assert recovery.produce_s is not None and recovery.produce_s <= bound
    for group in groups:
        stable = recovery.stable_s[group]
        assert stable is not None and stable <= bound, (group, recovery.summary())
