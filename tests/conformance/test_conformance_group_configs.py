"""Group configs (KIP-848 dynamic group configuration), differentially: IncrementalAlterConfigs
and DescribeConfigs on GROUP resources, and their effect on a group.

Mirrors `GroupConfig` (names, ranges, validation against the broker's bounds) and
`GroupMetadataManager`'s use of per-group overrides.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance import consumer
from conformance.conversation import Conversation
from conformance.differential import Scenario
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

Run = Callable[[Scenario], None]
GROUP_RESOURCE = 32
SET, DELETE = 0, 1
GROUP_CONFIG_SOURCE = 8  # DescribeConfigs' ConfigSource.GROUP_CONFIG
M1, M2 = consumer.member_id(1), consumer.member_id(2)


def alter(c: Conversation, step: str, group: str, *configs: tuple[str, int, str | None],
          validate_only: bool = False) -> IncrementalAlterConfigsResponse:
    return c.call(step, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group, configs=[
            AlterableConfig(name=name, config_operation=op, value=value)
            for name, op, value in configs])], validate_only=validate_only), 1,
        IncrementalAlterConfigsResponse)


def describe(c: Conversation, step: str, group: str, keys: list[str]) -> None:
    c.call(step, DescribeConfigsRequest(resources=[DescribeConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=keys)],
        include_synonyms=False, include_documentation=False), 4, DescribeConfigsResponse)


def wait_applied(c: Conversation, group: str, key: str, value: str | None) -> None:
    """Kafka applies a group config through the controller's metadata log, after
    IncrementalAlterConfigs answers; wait until DescribeConfigs shows the override (or, for
    None, no override) before the scenario goes on."""
    def applied() -> bool:
        described = c.quiet(DescribeConfigsRequest(resources=[DescribeConfigsResource(
            resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=[key])],
            include_synonyms=False, include_documentation=False), 4, DescribeConfigsResponse)
        entry = described.results[0].configs[0]
        overridden = entry.config_source == GROUP_CONFIG_SOURCE
        return overridden and entry.value == value if value is not None else not overridden
    c.wait_until(applied, f"{key} of {group} = {value}")


def test_alter_and_describe_group_configs(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        alter(c, "set the session timeout", group,
              ("consumer.session.timeout.ms", SET, "50000"))
        wait_applied(c, group, "consumer.session.timeout.ms", "50000")
        describe(c, "describe it", group, ["consumer.session.timeout.ms"])
        alter(c, "below the broker's minimum", group,
              ("consumer.session.timeout.ms", SET, "10"))
        alter(c, "an unknown config", group, ("no.such.config", SET, "1"))
        alter(c, "not a number", group, ("consumer.heartbeat.interval.ms", SET, "soon"))
        alter(c, "validate only", group, ("consumer.heartbeat.interval.ms", SET, "6000"),
              validate_only=True)
        alter(c, "delete the override", group,
              ("consumer.session.timeout.ms", DELETE, None))
        wait_applied(c, group, "consumer.session.timeout.ms", None)
        describe(c, "describe after delete", group, ["consumer.session.timeout.ms"])
        alter(c, "empty group name", "", ("consumer.session.timeout.ms", SET, "50000"))
    differential(scenario)


def test_group_heartbeat_interval_override_reaches_the_member(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        alter(c, "set the heartbeat interval", group,
              ("consumer.heartbeat.interval.ms", SET, "7000"))
        wait_applied(c, group, "consumer.heartbeat.interval.ms", "7000")
        # Kafka's coordinator learns group configs from the metadata log on its own, a little
        # after DescribeConfigs shows them: (re)join until the override is in the answer.
        joined: list[consumer.ConsumerGroupHeartbeatResponse] = []

        def sees_override() -> bool:
            joined.append(c.quiet(consumer.join_request(group, M1, [topic.name]),
                                  consumer.HEARTBEAT_VERSION,
                                  consumer.ConsumerGroupHeartbeatResponse))
            return joined[-1].heartbeat_interval_ms == 7000
        c.wait_until(sees_override, "the heartbeat interval override in a join")
        c.record("join sees the override", joined[-1])
    differential(scenario)


def test_consumer_assignment_interval_holds_the_second_assignment(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t", partitions=2)
        group = c.name("g")
        altered = alter(c, "a long assignment interval", group,
                        ("consumer.assignment.interval.ms", SET, "15000"))
        if altered.responses[0].error_code == 0:
            wait_applied(c, group, "consumer.assignment.interval.ms", "15000")
        first = consumer.join(c, "m1 join is assigned at once", group, M1, [topic.name])
        consumer.beat(c, "m1 ack", group, M1, first.member_epoch, consumer.assigned(first))
        consumer.join(c, "m2 join within the interval", group, M2, [topic.name])
        consumer.describe(c, "describe: the target waits for the interval", group)
    differential(scenario)


STREAMS_KEYS = ["streams.session.timeout.ms", "streams.heartbeat.interval.ms",
                "streams.num.standby.replicas", "streams.initial.rebalance.delay.ms",
                "streams.rack.aware.assignment.tags", "streams.acceptable.recovery.lag"]


def test_alter_and_describe_streams_group_configs(differential: Run) -> None:
    """The `streams.*` names of `GroupConfig` and their `validateValues` rules."""
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        alter(c, "set the standby replicas", group, ("streams.num.standby.replicas", SET, "1"))
        wait_applied(c, group, "streams.num.standby.replicas", "1")
        describe(c, "describe the streams names", group, STREAMS_KEYS)
        alter(c, "too many standbys", group, ("streams.num.standby.replicas", SET, "3"))
        alter(c, "negative standbys", group, ("streams.num.standby.replicas", SET, "-1"))
        alter(c, "session below the broker's minimum", group,
              ("streams.session.timeout.ms", SET, "1000"))
        alter(c, "heartbeat not below the session", group,
              ("streams.heartbeat.interval.ms", SET, "15000"),
              ("streams.session.timeout.ms", SET, "15000"))
        alter(c, "duplicate rack tags", group,
              ("streams.rack.aware.assignment.tags", SET, "zone,zone"))
        alter(c, "an unknown assignor", group, ("streams.assignor.name", SET, "fancy"))
        alter(c, "not a number", group, ("streams.initial.rebalance.delay.ms", SET, "soon"))
        alter(c, "delete the override", group, ("streams.num.standby.replicas", DELETE, None))
        wait_applied(c, group, "streams.num.standby.replicas", None)
        describe(c, "describe after delete", group, ["streams.num.standby.replicas"])
    differential(scenario)
