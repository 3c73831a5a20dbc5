"""Group-level dynamic configs of streams groups (Kafka `GroupConfig`, the `streams.*`
part): set per group with IncrementalAlterConfigs on a GROUP resource; an unset name falls
back to the broker's `group.streams.*` setting (`GroupConfig.extractGroupConfigMap`).

`validate` checks a group's resulting config as `GroupConfig.validate` does (ConfigDef
parsing and lower bounds, `validateValues`' ranges from the broker settings, no duplicate
rack-aware tags, a registered assignor, session longer than heartbeat), raising
`ValueError` with Kafka's messages. `settings` gives the effective values the coordinator
uses. `streams.assignor.offload.enable` and `streams.num.warmup.replicas` are validated
and stored but change nothing: groupcoord assigns on the heartbeat (as Kafka without
offload) and, as Kafka 4.4, inserts no warm-up tasks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from groupcoord.coordinator.config import GroupCoordinatorConfig
from groupcoord.coordinator.streams.assignor import NAME as STICKY

SESSION = "streams.session.timeout.ms"
HEARTBEAT = "streams.heartbeat.interval.ms"
STANDBYS = "streams.num.standby.replicas"
INITIAL_DELAY = "streams.initial.rebalance.delay.ms"
ASSIGNMENT_INTERVAL = "streams.assignment.interval.ms"
RACK_TAGS = "streams.rack.aware.assignment.tags"
OFFLOAD = "streams.assignor.offload.enable"
TASK_OFFSET_INTERVAL = "streams.task.offset.interval.ms"
WARMUPS = "streams.num.warmup.replicas"
RECOVERY_LAG = "streams.acceptable.recovery.lag"
ASSIGNOR = "streams.assignor.name"
# Kafka's broker defaults of the settings groupcoord has no broker knob for.
MIN_TASK_OFFSET_INTERVAL = 15_000
WARMUPS_DEFAULT, MAX_WARMUPS = 2, 20


@dataclass(frozen=True, slots=True)
class Definition:
    kind: str  # "int", "long", "bool", "list", "string"
    at_least: int | None
    broker_default: Callable[[GroupCoordinatorConfig], str | None]
    doc: str
    # `ConfigDef.defineInternal`: settable, but DescribeConfigs does not list it.
    internal: bool = False


def _int(attr: str) -> Callable[[GroupCoordinatorConfig], str]:
    return lambda c: str(getattr(c, attr))


STREAMS_CONFIGS: dict[str, Definition] = {
    SESSION: Definition("int", 1, _int("group_streams_session_timeout_ms"),
                        "The timeout to detect client failures when using the streams group "
                        "protocol."),
    HEARTBEAT: Definition("int", 1, _int("group_streams_heartbeat_interval_ms"),
                          "The heartbeat interval given to the members."),
    STANDBYS: Definition("int", 0, _int("group_streams_num_standby_replicas"),
                         "The number of standby replicas for each task."),
    INITIAL_DELAY: Definition("int", 0, _int("group_streams_initial_rebalance_delay_ms"),
                              "The amount of time the group coordinator will wait for more "
                              "streams clients to join a new group before performing the first "
                              "rebalance."),
    ASSIGNMENT_INTERVAL: Definition("int", 0, _int("group_streams_assignment_interval_ms"),
                                    "The minimum time between two target assignments."),
    OFFLOAD: Definition("bool", None, lambda c: "true",
                        "Whether to offload the assignment to a background thread.",
                        internal=True),
    TASK_OFFSET_INTERVAL: Definition("int", 1, _int("group_streams_task_offset_interval_ms"),
                                     "The interval at which members report task offsets.",
                                     internal=True),
    WARMUPS: Definition("int", 0, lambda c: str(WARMUPS_DEFAULT),
                        "The maximum number of warm-up replicas.", internal=True),
    RACK_TAGS: Definition("list", None,
                          lambda c: ",".join(c.group_streams_rack_aware_assignment_tags),
                          "List of client tag keys used to distribute standby replicas."),
    RECOVERY_LAG: Definition("long", 0, _int("group_streams_acceptable_recovery_lag"),
                             "The maximum acceptable lag for a caught-up client.",
                             internal=True),
    ASSIGNOR: Definition("string", None, lambda c: None,
                         "The name of the streams task assignor of the group."),
}


@dataclass(frozen=True, slots=True)
class StreamsGroupSettings:
    """The effective streams-group settings of one group."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    num_standby_replicas: int
    initial_rebalance_delay_ms: int
    assignment_interval_ms: int
    task_offset_interval_ms: int
    acceptable_recovery_lag: int
    rack_aware_assignment_tags: tuple[str, ...]


def defaults(config: GroupCoordinatorConfig) -> dict[str, str | None]:
    return {name: d.broker_default(config) for name, d in STREAMS_CONFIGS.items()}


def _tags(value: str) -> tuple[str, ...]:
    trimmed = value.strip()
    return tuple(re.split(r"\s*,\s*", trimmed)) if trimmed else ()


def settings(config: GroupCoordinatorConfig,
             overrides: Mapping[str, str] | None) -> StreamsGroupSettings:
    values = {**defaults(config), **{k: v for k, v in (overrides or {}).items()
                                     if k in STREAMS_CONFIGS}}

    def number(name: str) -> int:
        return int(str(values[name]).strip())
    return StreamsGroupSettings(
        number(SESSION), number(HEARTBEAT), number(STANDBYS), number(INITIAL_DELAY),
        number(ASSIGNMENT_INTERVAL), number(TASK_OFFSET_INTERVAL), number(RECOVERY_LAG), _tags(values[RACK_TAGS] or ""))


def _parse(name: str, value: str) -> object:
    """ConfigDef parsing and its `atLeast` validators."""
    definition = STREAMS_CONFIGS[name]
    text = value.strip()
    if definition.kind in ("int", "long"):
        try:
            number = int(text)
        except ValueError:
            kind = "INT" if definition.kind == "int" else "LONG"
            raise ValueError(f"Invalid value {value} for configuration {name}: "
                             f"Not a number of type {kind}") from None
        if definition.at_least is not None and number < definition.at_least:
            raise ValueError(f"Invalid value {number} for configuration {name}: "
                             f"Value must be at least {definition.at_least}")
        return number
    if definition.kind == "bool":
        if text.lower() not in ("true", "false"):
            raise ValueError(f"Invalid value {value} for configuration {name}: "
                             "Expected value to be either true or false")
        return text.lower() == "true"
    return text


def validate(config: GroupCoordinatorConfig, current: Mapping[str, str],
             changes: Mapping[str, str | None]) -> None:
    """`GroupConfig.validate` over the streams names of the group's resulting config."""
    merged = {k: v for k, v in current.items() if k in STREAMS_CONFIGS}
    for name, value in changes.items():
        if name in STREAMS_CONFIGS:
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
    raw_tags = merged.get(RACK_TAGS)
    if raw_tags is not None and len(set(_tags(raw_tags))) != len(_tags(raw_tags)):
        raise ValueError(f"{RACK_TAGS} must not contain duplicate tag keys.")
    parsed = {name: _parse(name, value) for name, value in merged.items()}

    def within(name: str, low: int | None, high: int | None) -> None:
        if name not in parsed:
            return
        value = parsed[name]
        assert isinstance(value, int)
        if low is not None and high is not None and not low <= value <= high:
            raise ValueError(f"{name} must be in the range {low} to {high} inclusive.")
        if low is None and high is not None and value > high:
            raise ValueError(f"{name} must be less than or equal to {high}")
        if high is None and low is not None and value < low:
            raise ValueError(f"{name} must be greater than or equal to {low}")
    within(HEARTBEAT, config.group_streams_min_heartbeat_interval_ms,
           config.group_streams_max_heartbeat_interval_ms)
    within(SESSION, config.group_streams_min_session_timeout_ms,
           config.group_streams_max_session_timeout_ms)
    within(STANDBYS, None, config.group_streams_max_standby_replicas)
    within(ASSIGNMENT_INTERVAL, config.group_streams_min_assignment_interval_ms,
           config.group_streams_max_assignment_interval_ms)
    within(TASK_OFFSET_INTERVAL, MIN_TASK_OFFSET_INTERVAL, None)
    within(WARMUPS, None, MAX_WARMUPS)
    if ASSIGNOR in parsed and parsed[ASSIGNOR] != STICKY:
        raise ValueError(f"{ASSIGNOR} '{parsed[ASSIGNOR]}' is not a registered task assignor. "
                         f"Registered assignors are: [{STICKY}].")
    if SESSION in parsed or HEARTBEAT in parsed:
        session = parsed.get(SESSION, config.group_streams_session_timeout_ms)
        heartbeat = parsed.get(HEARTBEAT, config.group_streams_heartbeat_interval_ms)
        assert isinstance(session, int) and isinstance(heartbeat, int)
        if session <= heartbeat:
            raise ValueError(f"{SESSION} must be greater than {HEARTBEAT}")
