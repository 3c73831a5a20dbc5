"""Group-level dynamic configs of consumer groups (Kafka `GroupConfig`, the `consumer.*`
part, KIP-848): `consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms` and
`consumer.assignment.interval.ms` (KIP-1263).

Set per group with IncrementalAlterConfigs on a GROUP resource; an unset name falls back
to the broker's `group.consumer.session.timeout.ms` / `group.consumer.heartbeat.interval.ms`
(`GroupConfig.extractGroupConfigMap`). `validate` checks the group's whole resulting config
(its stored overrides with the changes applied, defaults from the broker) as Kafka's
`GroupConfig.validate` does, raising `ValueError` with Kafka's messages. `settings` gives
the effective values the coordinator uses (`GroupMetadataManager.
consumerGroupSessionTimeoutMs` / `consumerGroupHeartbeatIntervalMs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.coordinator.config import GroupCoordinatorConfig

SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"
CONSUMER_CONFIG_DOCS: dict[str, str] = {
    SESSION_TIMEOUT: "The timeout to detect client failures when using the consumer group "
                     "protocol.",
    HEARTBEAT_INTERVAL: "The heartbeat interval given to the members of a consumer group.",
    ASSIGNMENT_INTERVAL: "The interval between assignment updates for a consumer group.",
}


@dataclass(frozen=True, slots=True)
class ConsumerGroupSettings:
    """The effective consumer-group settings of one group."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    assignment_interval_ms: int


def defaults(config: GroupCoordinatorConfig) -> dict[str, str]:
    """The broker values an unset name falls back to."""
    return {SESSION_TIMEOUT: str(config.group_consumer_session_timeout_ms),
            HEARTBEAT_INTERVAL: str(config.group_consumer_heartbeat_interval_ms),
            ASSIGNMENT_INTERVAL: str(config.group_consumer_assignment_interval_ms)}


def settings(config: GroupCoordinatorConfig,
             overrides: Mapping[str, str] | None) -> ConsumerGroupSettings:
    values = {**defaults(config), **{k: v for k, v in (overrides or {}).items()
                                     if k in CONSUMER_CONFIG_DOCS}}
    return ConsumerGroupSettings(int(values[SESSION_TIMEOUT]), int(values[HEARTBEAT_INTERVAL]),
                                 int(values[ASSIGNMENT_INTERVAL]))


def _parse(name: str, value: str, least: int = 1) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise ValueError(f"Invalid value {value} for configuration {name}: "
                         f"Not a number of type INT") from None
    if number < least:
        raise ValueError(f"Invalid value {value} for configuration {name}: "
                         f"Value must be at least {least}")
    return number


def _within(name: str, value: int, low: tuple[str, int], high: tuple[str, int]) -> None:
    if value < low[1]:
        raise ValueError(f"{name} must be greater than or equal to {low[0]}")
    if value > high[1]:
        raise ValueError(f"{name} must be less than or equal to {high[0]}")


def validate(config: GroupCoordinatorConfig, current: Mapping[str, str],
             changes: Mapping[str, str | None]) -> None:
    """Kafka's `GroupConfig.validate` of the consumer names over the resulting config."""
    merged = {**defaults(config), **{k: v for k, v in current.items()
                                     if k in CONSUMER_CONFIG_DOCS}}
    for name, value in changes.items():
        if name in CONSUMER_CONFIG_DOCS:
            merged[name] = value if value is not None else defaults(config)[name]
    interval = _parse(HEARTBEAT_INTERVAL, merged[HEARTBEAT_INTERVAL])
    session = _parse(SESSION_TIMEOUT, merged[SESSION_TIMEOUT])
    _within(HEARTBEAT_INTERVAL, interval,
            ("group.consumer.min.heartbeat.interval.ms",
             config.group_consumer_min_heartbeat_interval_ms),
            ("group.consumer.max.heartbeat.interval.ms",
             config.group_consumer_max_heartbeat_interval_ms))
    _within(SESSION_TIMEOUT, session,
            ("group.consumer.min.session.timeout.ms", config.group_consumer_min_session_timeout_ms),
            ("group.consumer.max.session.timeout.ms", config.group_consumer_max_session_timeout_ms))
    if interval >= session:
        raise ValueError(f"{HEARTBEAT_INTERVAL} must be less than {SESSION_TIMEOUT}")
    assignment = _parse(ASSIGNMENT_INTERVAL, merged[ASSIGNMENT_INTERVAL], least=0)
    low, high = (config.group_consumer_min_assignment_interval_ms,
                 config.group_consumer_max_assignment_interval_ms)
    if not low <= assignment <= high:
        # `GroupConfig.validateIntRange` (4.4).
        raise ValueError(f"{ASSIGNMENT_INTERVAL} must be in the range {low} to {high} "
                         f"inclusive.")
