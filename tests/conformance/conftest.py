"""Fixtures of the differential suite: one Apache Kafka and one groupcoord per test session,
and for the group scenarios a three-node groupcoord cluster on PostgreSQL too.

Every test in this directory that uses Apache Kafka is marked `reference` (it needs Java and
the Maven-fetched broker), so `make test-fast` leaves those out. The `differential` fixture runs
a scenario against Kafka and a groupcoord peer and compares the transcripts (see
`differential.py`). In the files of `CLUSTER_SCENARIO_FILES` every scenario runs twice: against
one groupcoord (`[groupcoord]`) and against the cluster (`[cluster]`, its requests routed to
the coordinators and leaders as a client's are, see `routing.py`), each compared with Kafka's
one run of it (kept for the session by scenario name: `make conformance` runs a file's tests
on one worker, `--dist loadfile`, so both variants find the same Kafka and its transcript).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.broker import BrokerFactory
from helpers.kraft_node import CONSUMER_ASSIGNMENT_ON_HEARTBEAT
from helpers.postgres_cluster import start_cluster, wait_for_spread_coordinators
from helpers.postgres_server import PostgresServer, postgres_server
from helpers.reference_broker import GROUP_SETTINGS, ReferenceBroker, log_event

from conformance.differential import Endpoint, KafkaTranscripts, Scenario, compare_on

__all__ = ["postgres_server"]  # the session's PostgreSQL, for the cluster peer

_HERE = Path(__file__).resolve().parent

# The group scenario files, run against the three-node cluster as well as one groupcoord.
CLUSTER_SCENARIO_FILES = frozenset({
    "test_conformance_classic_groups.py", "test_conformance_consumer_groups.py",
    "test_conformance_streams_groups.py", "test_conformance_offsets_and_admin.py",
    "test_conformance_group_configs.py", "test_conformance_share_groups.py",
    "test_conformance_transactions.py"})
# Scenarios of those files not run against the cluster yet, each with why. These need the
# requests between nodes that are not done (docs/cluster.md, "What is not done yet"): where
# the share-partition leader and the share coordinator are on different nodes.
_SHARE_STATE = ("the share-partition leader and the group's share coordinator are on "
                "different nodes: share-state RPCs between nodes")
CLUSTER_AWAITS_CROSS_NODE_RPCS: dict[str, str] = {
    "test_share_group_and_consumer_group_ids_do_not_mix": _SHARE_STATE,
    "test_share_fetch_acknowledge_and_redelivery": _SHARE_STATE,
    "test_share_heartbeat_join_leave_describe": _SHARE_STATE,
    "test_share_fetch_session_errors": _SHARE_STATE,
    "test_share_first_heartbeat_assigns_after_initialization": _SHARE_STATE,
    "test_share_offsets_admin": _SHARE_STATE,
    "test_redelivery_is_throttled_near_the_delivery_limit": _SHARE_STATE,
    # Whether these meet the two on different nodes depends on where their names hash.
    "test_share_heartbeat_errors": _SHARE_STATE,
    "test_delivery_count_limit_archives_a_record": _SHARE_STATE,
}
PEERS = ("groupcoord", "cluster")
# Names stay short enough for every name a scenario derives from them.
SCENARIO_NAME_MAX = 80
CLUSTER_DATABASE = "conformance_cluster"
# Kafka's offsets.topic.num.partitions: a scenario's regex may match __consumer_offsets.
KAFKA_OFFSETS_PARTITIONS = 50
# Lease passes every 0.5 s (default 2 s): a topic created on one node is led by the others
# sooner, so each scenario's topic creation waits less.
CLUSTER_HEARTBEAT = ["--broker-heartbeat-interval-ms", "500"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Every test here that needs Apache Kafka (directly or through `differential`) is marked
    # `reference`; the DSL's own unit tests need no broker and stay in `make test-fast`.
    for item in items:
        needs_kafka = "kafka_reference" in getattr(item, "fixturenames", ())
        if _HERE in Path(str(item.fspath)).resolve().parents and needs_kafka:
            item.add_marker(pytest.mark.reference)


@pytest.fixture(scope="session")
def kafka_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceBroker]:
    broker = ReferenceBroker(tmp_path_factory.mktemp("kafka-reference"))
    broker.start()
    log_event(f"RSS after start: {broker.rss_kib() // 1024} MiB")
    yield broker
    broker.stop()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A group scenario's `differential` runs against each peer (see the module docstring).
    if ("differential" not in metafunc.fixturenames
            or Path(str(metafunc.definition.fspath)).name not in CLUSTER_SCENARIO_FILES):
        return
    peers = [peer for peer in PEERS
             if peer != "cluster" or metafunc.definition.name not in CLUSTER_AWAITS_CROSS_NODE_RPCS]
    metafunc.parametrize("peer", peers, indirect=True)


def scenario_name(item: pytest.Item) -> str:
    """The prefix of everything the scenario names, unique per test (parameters included,
    the peer's not: Kafka runs it once for every peer): Kafka is shared by every run, so no
    two may name the same group."""
    callspec = getattr(item, "callspec", None)  # pytest's, on parametrised tests only
    peer = None if callspec is None else callspec.params.get("peer")
    test_name = item.name if peer is None else _without_id(item.name, peer)
    name = test_name.replace("[", "-").replace("]", "").replace("_", "-")
    if len(name) <= SCENARIO_NAME_MAX:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[:SCENARIO_NAME_MAX - len(digest) - 1]}-{digest}"


def _without_id(test_name: str, param_id: str) -> str:
    """`test_name` without one parameter's id: test[a-x-b] less x is test[a-b]."""
    base, _, ids = test_name.partition("[")
    kept = ids.removesuffix("]").split("-")
    kept.remove(param_id)
    return f"{base}[{'-'.join(kept)}]" if kept else base


def _group_settings() -> list[str]:
    # Both brokers compute a consumer group's target on the heartbeat that bumps the epoch
    # (assignment interval 0), so consumer-group scenarios compare step by step.
    interval = "group.consumer.assignment.interval.ms"
    return ["--group-initial-rebalance-delay-ms", GROUP_SETTINGS["group.initial.rebalance.delay.ms"],
            "--default-partitions", GROUP_SETTINGS["num.partitions"],
            "--group-config", "group.streams.initial.rebalance.delay.ms="
            + GROUP_SETTINGS["group.streams.initial.rebalance.delay.ms"],
            "--group-config", "group.streams.assignment.interval.ms="
            + CONSUMER_ASSIGNMENT_ON_HEARTBEAT["group.streams.assignment.interval.ms"],
            "--group-config", f"{interval}={CONSUMER_ASSIGNMENT_ON_HEARTBEAT[interval]}"]


@pytest.fixture(scope="session")
def groupcoord_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    factory = BrokerFactory(tmp_path_factory.mktemp("groupcoord-peer"))
    broker = factory.create(extra_args=_group_settings())
    yield Endpoint("groupcoord", "127.0.0.1", broker.port)
    factory.close()


@pytest.fixture(scope="session")
def cluster_peer(tmp_path_factory: pytest.TempPathFactory,
                 postgres_server: PostgresServer) -> Iterator[Endpoint]:
    """Three groupcoord nodes on one PostgreSQL database, with groupcoord_peer's group
    settings; scenarios bootstrap from node 1 and are routed from there."""
    postgres_server.create_database(CLUSTER_DATABASE)
    factory = BrokerFactory(tmp_path_factory.mktemp("cluster-peer"))
    try:
        nodes = start_cluster(factory, postgres_server.url_for(CLUSTER_DATABASE),
                              _group_settings() + CLUSTER_HEARTBEAT,
                              offsets_partitions=KAFKA_OFFSETS_PARTITIONS)
        wait_for_spread_coordinators(nodes)
        yield Endpoint("groupcoord-cluster", "127.0.0.1", nodes[min(nodes)].port, routed=True)
    finally:
        factory.close()


@pytest.fixture
def peer(request: pytest.FixtureRequest) -> Endpoint:
    """The groupcoord the scenario is compared on: one broker, or the cluster where the
    scenario is parametrised so."""
    kind = request.param if hasattr(request, "param") else "groupcoord"
    fixture = {"groupcoord": "groupcoord_peer", "cluster": "cluster_peer"}[kind]
    endpoint = request.getfixturevalue(fixture)
    assert isinstance(endpoint, Endpoint)
    return endpoint


@pytest.fixture(scope="session")
def kafka_transcripts(kafka_reference: ReferenceBroker) -> KafkaTranscripts:
    return KafkaTranscripts(Endpoint("kafka", "127.0.0.1", kafka_reference.port))


@pytest.fixture
def differential(kafka_transcripts: KafkaTranscripts, peer: Endpoint,
                 request: pytest.FixtureRequest) -> Callable[[Scenario], None]:
    """`differential(scenario)`: run it on the peer under this test's name and compare with
    Kafka's run of it (the first peer's call runs it on Kafka)."""
    name = scenario_name(request.node)

    def run(scenario: Scenario) -> None:
        compare_on(kafka_transcripts.of(name, scenario), peer, name, scenario)

    return run
