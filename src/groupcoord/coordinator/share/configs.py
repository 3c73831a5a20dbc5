"""Group-level dynamic configs of share groups (Kafka `GroupConfig`, the `share.*` part
and KIP-1191's `errors.deadletterqueue.*` names).

Set per group with IncrementalAlterConfigs on a GROUP resource; unset names fall back to
the broker value (`group.share.*`, `broker_defaults`), else Kafka's default. `validate` raises `ValueError` with Kafka's kind of message for an
unknown name or a value out of the broker's range (`GroupConfig.validate`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from groupcoord.coordinator.config import INT32_MAX, GroupCoordinatorConfig

DEFAULT_BROKER = GroupCoordinatorConfig()


DLQ_TOPIC_NAME = "errors.deadletterqueue.topic.name"
DLQ_COPY_RECORD = "errors.deadletterqueue.copy.record.enable"


@dataclass(frozen=True, slots=True)
class ShareConfig:
    """The share-group settings one partition obeys (group config over broker default)."""

    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2_000
    auto_offset_reset: str = "latest"
    # `share.isolation.level`: read_committed reads up to the last stable offset and never
    # delivers records of aborted transactions (`SharePartition` archives them).
    read_committed: bool = False
    # The group has a dead-letter topic and share.version >= 2 (`isDLQEnabledForGroup`).
    dlq: bool = False


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    default: str
    kind: str  # "int", "bool", "choice" or "string"
    low: int = 0
    high: int = INT32_MAX
    choices: tuple[str, ...] = ()
    doc: str = ""


SHARE_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in (
    ConfigDef("share.session.timeout.ms", "45000", "int", 45_000, 60_000,
              doc="The timeout to detect client failures when using the share group protocol."),
    ConfigDef("share.heartbeat.interval.ms", "5000", "int", 5_000, 15_000,
              doc="The heartbeat interval given to the members of a share group."),
    ConfigDef("share.record.lock.duration.ms", "30000", "int", 15_000, 60_000,
              doc="The record acquisition lock duration in milliseconds for share groups."),
    ConfigDef("share.delivery.count.limit", "5", "int", 2, 10,
              doc="The maximum number of delivery attempts for a record delivered to a "
                  "share group."),
    # `GroupConfig.CONFIG_DEF`'s atLeast(100); the broker's
    # group.share.min/max.partition.max.record.locks bound it further (BROKER_BOUNDS).
    ConfigDef("share.partition.max.record.locks", "2000", "int", 100,
              doc="Share-group record lock limit per share-partition."),
    ConfigDef("share.auto.offset.reset", "latest", "choice",
              choices=("latest", "earliest"),
              doc="The strategy to initialize the share-partition start offset."),
    ConfigDef("share.isolation.level", "read_uncommitted", "choice",
              choices=("read_uncommitted", "read_committed"),
              doc="Controls how to read records written transactionally."),
    ConfigDef("share.renew.acknowledge.enable", "true", "bool",
              doc="Whether the renew acknowledge type is accepted."),
    ConfigDef("share.assignment.interval.ms", "1000", "int", 0, 15_000,
              doc="The interval between target assignment computations."),
    # KIP-1191 (group-coordinator/.../GroupConfig.java, Kafka 4.4).
    ConfigDef(DLQ_TOPIC_NAME, "", "string",
              doc="The name of the topic to be used as the dead-letter queue (DLQ) topic for "
                  "this share group. If blank (the default), the group does not have a DLQ "
                  "topic."),
    ConfigDef(DLQ_COPY_RECORD, "false", "bool",
              doc="When writing onto the dead-letter queue topic, whether to copy the original "
                  "record onto the DLQ topic, or just write a record containing the context "
                  "information headers."),
)}


def broker_defaults(config: GroupCoordinatorConfig) -> dict[str, str]:
    """The group configs whose default is a broker setting (`ShareGroupConfig`'s
    `group.share.*`), by group config name."""
    return {
        "share.session.timeout.ms": str(config.group_share_session_timeout_ms),
        "share.heartbeat.interval.ms": str(config.group_share_heartbeat_interval_ms),
        "share.record.lock.duration.ms": str(config.group_share_record_lock_duration_ms),
        "share.delivery.count.limit": str(config.group_share_delivery_count_limit),
        "share.partition.max.record.locks": str(config.group_share_partition_max_record_locks),
        "share.assignment.interval.ms": str(config.group_share_assignment_interval_ms),
    }


# `GroupConfig.validateValues` (Kafka 4.4): group configs whose range the broker sets.
BROKER_BOUNDS = {
    "share.partition.max.record.locks": lambda broker: (
        broker.group_share_min_partition_max_record_locks,
        broker.group_share_max_partition_max_record_locks),
}


def validate(name: str, value: str | None,
             broker: GroupCoordinatorConfig = DEFAULT_BROKER) -> None:
    definition = SHARE_CONFIGS.get(name)
    if definition is None:
        raise ValueError(f"Unknown group config name: {name}")
    if value is None:
        return
    if name == "share.record.lock.duration.ms":  # `GroupConfig.validateValues`
        definition = replace(definition, low=broker.group_share_min_record_lock_duration_ms,
                             high=broker.group_share_max_record_lock_duration_ms)
    if definition.kind == "int":
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"Invalid value {value} for configuration {name}") from None
        if definition.high == INT32_MAX and number < definition.low:  # ConfigDef atLeast
            raise ValueError(f"Invalid value {value} for configuration {name}: Value must be "
                             f"at least {definition.low}")
        if not definition.low <= number <= definition.high:
            raise ValueError(f"Invalid value {value} for configuration {name}: value must be "
                             f"between {definition.low} and {definition.high}")
        bounds = BROKER_BOUNDS.get(name)
        if bounds is not None:
            low, high = bounds(broker)
            if not low <= number <= high:
                # `GroupConfig.validateIntRange`
                raise ValueError(f"{name} must be in the range {low} to {high} inclusive.")
    elif definition.kind == "bool":
        if value.strip().lower() not in ("true", "false"):
            raise ValueError(f"Invalid value {value} for configuration {name}")
    elif definition.kind == "string":
        # `GroupConfig.validate`: names starting "__" are reserved for internal topics.
        if name == DLQ_TOPIC_NAME and value.strip().startswith("__"):
            raise ValueError(f"{name}: DLQ topic name must not start with '__'")
    elif value.lower() not in definition.choices and not (
            name == "share.auto.offset.reset" and by_duration_ms(value) is not None):
        raise ValueError(f"Invalid value {value} for configuration {name}: "
                         f"String must be one of: {', '.join(definition.choices)}")


def share_config(overrides: Mapping[str, str],
                 defaults: Mapping[str, str] | None = None,
                 dlq_supported: bool = True) -> ShareConfig:
    """The effective share-partition settings of a group: its overrides, else the broker's
    `defaults` (`broker_defaults`), else Kafka's defaults. The DLQ is on when the group
    names a DLQ topic and `dlq_supported` (share.version >= 2)."""
    def get(name: str) -> str:
        if name in overrides:
            return overrides[name]
        return (defaults or {}).get(name, SHARE_CONFIGS[name].default)
    return ShareConfig(
        record_lock_duration_ms=int(get("share.record.lock.duration.ms")),
        delivery_count_limit=int(get("share.delivery.count.limit")),
        max_record_locks=int(get("share.partition.max.record.locks")),
        auto_offset_reset=get("share.auto.offset.reset").lower(),
        read_committed=get("share.isolation.level").lower() == "read_committed",
        dlq=dlq_supported and bool(dlq_topic(overrides)),
    )


def dlq_topic(overrides: Mapping[str, str]) -> str:
    """The group's DLQ topic name ("" = none), as `GroupConfig` trims string values."""
    return overrides.get(DLQ_TOPIC_NAME, "").strip()


def dlq_copy_record(overrides: Mapping[str, str]) -> bool:
    return overrides.get(DLQ_COPY_RECORD, "false").strip().lower() == "true"


_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d{1,9})?)S)?)?")


def by_duration_ms(value: str) -> int | None:
    """The milliseconds of `by_duration:<ISO-8601 duration>` (Java `Duration.parse`
    format `PnDTnHnMn.nS`), or None when `value` is not of that form."""
    prefix = "by_duration:"
    if not value.lower().startswith(prefix):
        return None
    text = value[len(prefix):].strip().upper()
    match = _DURATION.fullmatch(text)
    if match is None or text in ("P", "PT") or text.endswith("T"):
        return None
    days, hours, minutes, seconds = match.groups()
    total = (int(days or 0) * 86_400 + int(hours or 0) * 3_600 + int(minutes or 0) * 60
             + float(seconds or 0))
    return int(total * 1000)
