"""Classic consumer groups with real clients: join, consume while committing, leave, die.

One parametrized case per client and assignor runs `helpers.group_scenario`: members join
(1, 3, then 8 of them) over a 12-partition topic under a continuous produce stream, one is
SIGKILLed and evicted at its session timeout, the rest leave gracefully one by one. After
every change each partition is owned by exactly one live member (rebalance callbacks and
DescribeGroups agree); at the end no record is lost and duplicates come only from the
killed member's uncommitted tail (or a commit the client saw fail).

One broker serves the module, with no initial rebalance delay so joins settle at once; the
cases of CLUSTER_CASES run against the session's three-node cluster on PostgreSQL too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.broker import ONE_NODE, THREE_NODE_CLUSTER, BrokerFactory, BrokerProcess
from helpers.group_scenario import run_membership_scenario
from helpers.postgres_cluster import cluster_bootstrap

pytestmark = pytest.mark.interop

CASES = [
    ("confluent", "range"),
    ("confluent", "roundrobin"),
    ("confluent", "cooperative-sticky"),
    ("java", "range"),
    ("java", "roundrobin"),
    ("java", "sticky"),
    ("java", "cooperative-sticky"),
    ("kafka-python", "range"),
    ("kafka-python", "roundrobin"),
    ("kafka-python", "sticky"),
    ("aiokafka", "range"),
    ("aiokafka", "roundrobin"),
]


# One case per client on the three-node cluster as well.
CLUSTER_CASES = [("confluent", "range"), ("java", "range")]
RUNS = ([(c, a, ONE_NODE) for c, a in CASES]
        + [(c, a, THREE_NODE_CLUSTER) for c, a in CLUSTER_CASES])


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory,
                 request: pytest.FixtureRequest) -> Iterator[BrokerProcess]:
    if request.param == THREE_NODE_CLUSTER:
        yield cluster_bootstrap(request)
        return
    factory = BrokerFactory(tmp_path_factory.mktemp("groups"),
                            ["--group-initial-rebalance-delay-ms", "0"])
    yield factory.create()
    factory.close()


@pytest.mark.parametrize(("client", "assignor", "group_broker"), RUNS, indirect=["group_broker"],
                         ids=[f"{c}-{a}" + ("" if k == ONE_NODE else f"-{k}") for c, a, k in RUNS])
def test_membership_changes(client: str, assignor: str, group_broker: BrokerProcess,
                            tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if client == "java":
        request.getfixturevalue("java_harness")
    report = run_membership_scenario(group_broker.bootstrap, client, assignor, tmp_path)
    print(f"{client}/{assignor}: settle seconds {report.settle_s}, counts {report.counts}, "
          f"failed commits {report.commit_failures[:5]}")
