"""Group-level `consumer.*` overrides (KIP-848, Kafka `GroupConfig` +
`GroupMetadataManager.consumerGroupSessionTimeoutMs/HeartbeatIntervalMs`): validation
against the broker's bounds, and the coordinator using a group's values (given as an input
by the heartbeat) for the member session and the heartbeat interval, on a manual clock."""

from __future__ import annotations

from typing import Any

import pytest
from cg_harness import GROUP, CgHarness

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.consumer import group_config
from groupcoord.coordinator.result import OpContext
from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest

SESSION, INTERVAL = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
ASSIGNMENT = "consumer.assignment.interval.ms"
WIDE = GroupCoordinatorConfig(group_consumer_min_session_timeout_ms=10_000,
                              group_consumer_min_heartbeat_interval_ms=1_000)


def hb(h: CgHarness, member: str, epoch: int, overrides: dict[str, str] | None) -> Any:
    req = ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id=member, member_epoch=epoch, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["foo"], topic_partitions=[] if epoch == 0 else None)
    result = h.shard.consumer_group_heartbeat(req, 1, OpContext("c", "/h", 1), h.now,
                                              overrides)
    h.apply(result)
    return result.response


def test_member_expires_after_the_group_session_timeout() -> None:
    h = CgHarness(WIDE)
    resp = hb(h, "m1", 0, {SESSION: "12000", INTERVAL: "2000"})
    assert (resp.error_code, resp.heartbeat_interval_ms) == (0, 2000)
    assert h.timers[("consumer-session", GROUP, "m1")] == h.now + 12_000
    h.advance(11_999)
    assert "m1" in h.group().members
    h.advance(1)
    assert "m1" not in h.group().members


def test_without_overrides_the_broker_defaults_apply() -> None:
    h = CgHarness(WIDE)
    resp = hb(h, "m1", 0, {})
    assert resp.heartbeat_interval_ms == 5_000
    assert h.timers[("consumer-session", GROUP, "m1")] == h.now + 45_000


def test_a_changed_override_applies_from_the_next_heartbeat() -> None:
    h = CgHarness(WIDE)
    hb(h, "m1", 0, {})
    h.advance(1_000)
    resp = hb(h, "m1", 1, {SESSION: "20000", INTERVAL: "3000"})
    assert resp.heartbeat_interval_ms == 3_000
    assert h.timers[("consumer-session", GROUP, "m1")] == h.now + 20_000
    # Deleting the overrides goes back to the broker values.
    resp = hb(h, "m1", 1, {})
    assert resp.heartbeat_interval_ms == 5_000
    assert h.timers[("consumer-session", GROUP, "m1")] == h.now + 45_000
    # A heartbeat without the input (None) keeps what the group had.
    hb(h, "m1", 1, {SESSION: "20000"})
    assert hb(h, "m1", 1, None).heartbeat_interval_ms == 5_000
    assert h.timers[("consumer-session", GROUP, "m1")] == h.now + 20_000


def test_settings_and_defaults() -> None:
    config = GroupCoordinatorConfig()
    assert group_config.settings(config, {}) == \
        group_config.ConsumerGroupSettings(45_000, 5_000, 1_000)
    assert group_config.settings(config, {SESSION: "50000", "share.x": "1"}) == \
        group_config.ConsumerGroupSettings(50_000, 5_000, 1_000)
    assert group_config.settings(config, {ASSIGNMENT: "0"}).assignment_interval_ms == 0


@pytest.mark.parametrize(("current", "changes", "message"), [
    ({}, {ASSIGNMENT: "15001"},
     "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive."),
    ({}, {ASSIGNMENT: "-1"},
     ("Invalid value -1 for configuration consumer.assignment.interval.ms: "
      "Value must be at least 0")),
    ({}, {SESSION: "44999"},
     ("consumer.session.timeout.ms must be greater than or equal to "
     "group.consumer.min.session.timeout.ms")),
    ({}, {SESSION: "60001"},
     ("consumer.session.timeout.ms must be less than or equal to "
     "group.consumer.max.session.timeout.ms")),
    ({}, {INTERVAL: "4999"},
     ("consumer.heartbeat.interval.ms must be greater than or equal to "
     "group.consumer.min.heartbeat.interval.ms")),
    ({}, {INTERVAL: "15001"},
     ("consumer.heartbeat.interval.ms must be less than or equal to "
     "group.consumer.max.heartbeat.interval.ms")),
    ({}, {SESSION: "abc"},
     ("Invalid value abc for configuration consumer.session.timeout.ms: "
     "Not a number of type INT")),
    ({}, {INTERVAL: "0"},
     ("Invalid value 0 for configuration consumer.heartbeat.interval.ms: "
     "Value must be at least 1")),
])
def test_validation_messages(current: dict[str, str], changes: dict[str, str | None],
                             message: str) -> None:
    with pytest.raises(ValueError) as info:
        group_config.validate(GroupCoordinatorConfig(), current, changes)
    assert str(info.value) == message


def test_interval_below_session_over_the_resulting_config() -> None:
    config = GroupCoordinatorConfig(group_consumer_max_heartbeat_interval_ms=60_000)
    group_config.validate(config, {}, {INTERVAL: "44999"})
    with pytest.raises(ValueError, match="^consumer.heartbeat.interval.ms must be less than "
                                         "consumer.session.timeout.ms$"):
        group_config.validate(config, {}, {INTERVAL: "45000"})
    # The stored session override counts; deleting it goes back to the default.
    group_config.validate(config, {SESSION: "60000"}, {INTERVAL: "50000"})
    with pytest.raises(ValueError):
        group_config.validate(config, {SESSION: "60000", INTERVAL: "50000"}, {SESSION: None})


def test_the_group_assignment_interval_batches_its_targets() -> None:
    """KIP-1263's group-level `consumer.assignment.interval.ms` over the broker's (0 here)."""
    h = CgHarness()
    overrides = {ASSIGNMENT: "5000"}
    assert hb(h, "m1", 0, overrides).member_epoch == 1
    h.advance(4_999)
    assert hb(h, "m2", 0, overrides).member_epoch == 1  # the last target: nothing yet
    assert (h.group().group_epoch, h.group().assignment_epoch) == (2, 1)
    h.advance(1)
    assert hb(h, "m2", 1, overrides).member_epoch == 2
    # Without the override the broker's interval (0) applies again: at once.
    assert hb(h, "m3", 0, {}).member_epoch == 3
