"""Group configs (IncrementalAlterConfigs on GROUP) in a cluster on PostgreSQL: one set
through any node reaches every node's coordinators, each node's lease pass re-reading the
group configs document; and a change through one node keeps what another node set."""

from __future__ import annotations

import pytest
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.polling import wait_for
from helpers.postgres_cluster import SHORT_LEASE, ask, start_cluster

from groupcoord.wire.generated.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
)
from groupcoord.wire.generated.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

pytestmark = pytest.mark.timeout(180)

GROUP_RESOURCE = 32
SET = 0
SESSION_TIMEOUT = "consumer.session.timeout.ms"  # Kafka's range 45000..60000
# Several lease passes (SHORT_LEASE: one each 0.5 s) on a machine the test shares.
PROPAGATION_S = 20.0


def _set(node: BrokerProcess, group: str, name: str, value: str) -> None:
    request = IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group,
        configs=[AlterableConfig(name=name, config_operation=SET, value=value)])])
    response = ask(node, request, 1)
    assert isinstance(response, IncrementalAlterConfigsResponse)
    assert [r.error_code for r in response.responses] == [0]


def _described(node: BrokerProcess, group: str, name: str) -> str | None:
    """The group's config `name` as `node` describes it."""
    request = DescribeConfigsRequest(resources=[DescribeConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=[name])])
    response = ask(node, request, 4)
    assert isinstance(response, DescribeConfigsResponse)
    result = response.results[0]
    assert result.error_code == 0, result.error_message
    return next((c.value for c in result.configs if c.name == name), None)


def test_a_group_config_set_through_one_node_reaches_the_others(
        broker_factory: BrokerFactory, storage_url: str) -> None:
    nodes = start_cluster(broker_factory, storage_url, SHORT_LEASE)
    _set(nodes[1], "g1", SESSION_TIMEOUT, "50000")
    wait_for(lambda: all(_described(node, "g1", SESSION_TIMEOUT) == "50000"
                         for node in nodes.values()),
             "every node to describe g1's session timeout as set through node 1",
             PROPAGATION_S, interval=0.2)
    # Node 2 sets another group's: node 1's stays (the document is changed as stored).
    _set(nodes[2], "g2", SESSION_TIMEOUT, "55000")
    wait_for(lambda: all(_described(node, "g2", SESSION_TIMEOUT) == "55000"
                         for node in nodes.values()),
             "every node to describe g2's session timeout as set through node 2",
             PROPAGATION_S, interval=0.2)
    assert {n: _described(node, "g1", SESSION_TIMEOUT) for n, node in nodes.items()} == {
        n: "50000" for n in nodes}
