"""Topic and broker config definitions: names, types, defaults and broker synonyms.

Mirrors Kafka's `LogConfig` / `TopicConfig` (topic-level keys and their `log.*` broker
synonyms) and `ConfigResource` / `DescribeConfigsResponse.ConfigSource`. Used to validate
CreateTopics / IncrementalAlterConfigs and to answer DescribeConfigs with sources and
synonyms. Values are strings, as on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from groupcoord.apis.context import BrokerSettings

# ConfigResource.Type
RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER = 2, 4, 8
RESOURCE_CLIENT_METRICS, RESOURCE_GROUP = 16, 32

# DescribeConfigsResponse.ConfigSource
SOURCE_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5

# DescribeConfigsResponse.ConfigType
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_SHORT, TYPE_LONG, TYPE_DOUBLE, TYPE_LIST = 1, 2, 3, 4, 5, 6, 7

LONG_MAX = str(2**63 - 1)
DLQ_GROUP_ENABLE = "errors.deadletterqueue.group.enable"
DLQ_AUTO_CREATE = "errors.deadletterqueue.auto.create.topics.enable"
DLQ_TOPIC_PREFIX = "errors.deadletterqueue.topic.name.prefix"


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: int
    default: str | None
    synonym: str | None = None  # the broker-level key that supplies the default
    choices: tuple[str, ...] = ()
    documentation: str | None = None


def _defs(*items: ConfigDef) -> dict[str, ConfigDef]:
    return {d.name: d for d in items}


TOPIC_CONFIGS: dict[str, ConfigDef] = _defs(
    ConfigDef("cleanup.policy", TYPE_LIST, "delete", "log.cleanup.policy",
              ("delete", "compact", "compact,delete", "delete,compact")),
    ConfigDef("compression.type", TYPE_STRING, "producer", "compression.type",
              ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    ConfigDef("delete.retention.ms", TYPE_LONG, "86400000", "log.cleaner.delete.retention.ms"),
    # KIP-1191: only a topic with this set may be a share group's dead-letter topic.
    ConfigDef(DLQ_GROUP_ENABLE, TYPE_BOOLEAN, "false"),
    ConfigDef("file.delete.delay.ms", TYPE_LONG, "60000", "log.segment.delete.delay.ms"),
    ConfigDef("flush.messages", TYPE_LONG, LONG_MAX, "log.flush.interval.messages"),
    ConfigDef("flush.ms", TYPE_LONG, LONG_MAX, "log.flush.interval.ms"),
    ConfigDef("index.interval.bytes", TYPE_INT, "4096", "log.index.interval.bytes"),
    ConfigDef("max.compaction.lag.ms", TYPE_LONG, LONG_MAX, "log.cleaner.max.compaction.lag.ms"),
    ConfigDef("max.message.bytes", TYPE_INT, "1048588", "message.max.bytes"),
    ConfigDef("message.timestamp.type", TYPE_STRING, "CreateTime",
              "log.message.timestamp.type", ("CreateTime", "LogAppendTime")),
    ConfigDef("message.timestamp.before.max.ms", TYPE_LONG, LONG_MAX,
              "log.message.timestamp.before.max.ms"),
    ConfigDef("message.timestamp.after.max.ms", TYPE_LONG, "3600000",
              "log.message.timestamp.after.max.ms"),
    ConfigDef("min.cleanable.dirty.ratio", TYPE_DOUBLE, "0.5", "log.cleaner.min.cleanable.ratio"),
    ConfigDef("min.compaction.lag.ms", TYPE_LONG, "0", "log.cleaner.min.compaction.lag.ms"),
    ConfigDef("min.insync.replicas", TYPE_INT, "1", "min.insync.replicas"),
    ConfigDef("preallocate", TYPE_BOOLEAN, "false", "log.preallocate"),
    ConfigDef("retention.bytes", TYPE_LONG, "-1", "log.retention.bytes"),
    ConfigDef("retention.ms", TYPE_LONG, "604800000", "log.retention.ms"),
    ConfigDef("segment.bytes", TYPE_INT, "1073741824", "log.segment.bytes"),
    ConfigDef("segment.index.bytes", TYPE_INT, "10485760", "log.index.size.max.bytes"),
    ConfigDef("segment.jitter.ms", TYPE_LONG, "0", "log.roll.jitter.ms"),
    ConfigDef("segment.ms", TYPE_LONG, "604800000", "log.roll.ms"),
    ConfigDef("unclean.leader.election.enable", TYPE_BOOLEAN, "false",
              "unclean.leader.election.enable"),
)

# The topic configs the storage layer applies (LogConfig field names are these in
# snake_case); the others are accepted, stored and described only.
LOG_CONFIG_KEYS = frozenset({
    "segment.bytes", "segment.ms", "retention.ms", "retention.bytes", "index.interval.bytes",
    "segment.index.bytes", "message.timestamp.type", "cleanup.policy", "delete.retention.ms",
    "max.message.bytes",
})

# Broker-level keys DescribeConfigs(BROKER) lists, with their static defaults. Values that
# come from the command line are filled in by the server (`broker_static_configs`).
BROKER_CONFIGS: dict[str, ConfigDef] = _defs(
    ConfigDef("node.id", TYPE_INT, "0"),
    ConfigDef("broker.id", TYPE_INT, "0"),
    ConfigDef("log.dirs", TYPE_STRING, None),
    ConfigDef("num.partitions", TYPE_INT, "1"),
    ConfigDef("default.replication.factor", TYPE_INT, "1"),
    ConfigDef("auto.create.topics.enable", TYPE_BOOLEAN, "true"),
    ConfigDef("offsets.topic.num.partitions", TYPE_INT, "50"),
    ConfigDef("offsets.topic.replication.factor", TYPE_SHORT, "1"),
    ConfigDef("group.initial.rebalance.delay.ms", TYPE_INT, "3000"),
    ConfigDef("socket.request.max.bytes", TYPE_INT, "104857600"),
    ConfigDef("max.connections", TYPE_INT, "2147483647"),
    ConfigDef("max.connections.per.ip", TYPE_INT, "2147483647"),
    ConfigDef("max.connections.per.ip.overrides", TYPE_STRING, ""),
    ConfigDef("connections.max.idle.ms", TYPE_LONG, "600000"),
    ConfigDef("log.retention.hours", TYPE_INT, "168"),
    # KIP-1191, dynamic in Kafka (`GroupCoordinatorConfig.RECONFIGURABLE_CONFIGS`).
    ConfigDef(DLQ_AUTO_CREATE, TYPE_BOOLEAN, "false"),
    ConfigDef(DLQ_TOPIC_PREFIX, TYPE_STRING, "dlq."),
    ConfigDef("log.roll.hours", TYPE_INT, "168"),
    *(ConfigDef(d.synonym, d.type, d.default, choices=d.choices)
      for d in TOPIC_CONFIGS.values() if d.synonym and d.synonym != "min.insync.replicas"),
    ConfigDef("min.insync.replicas", TYPE_INT, "1"),
)


# The connection limits are dynamic in Kafka; here they are fixed at start-up.
READ_ONLY_BROKER_CONFIGS = frozenset({
    "node.id", "broker.id", "log.dirs", "max.connections", "max.connections.per.ip",
    "max.connections.per.ip.overrides", "connections.max.idle.ms"})


def validate_value(definition: ConfigDef, value: str | None) -> str | None:
    """Return an error message if `value` is not acceptable for `definition`."""
    if value is None:
        return f"Null value not supported for topic configs: {definition.name}"
    kind = definition.type
    try:
        if kind in (TYPE_INT, TYPE_SHORT, TYPE_LONG):
            int(value)
        elif kind == TYPE_DOUBLE:
            float(value)
        elif kind == TYPE_BOOLEAN and value.lower() not in ("true", "false"):
            raise ValueError(value)
    except ValueError:
        return f"Invalid value {value} for configuration {definition.name}"
    listed = kind == TYPE_LIST and set(value.split(",")) <= {"delete", "compact"}
    if definition.choices and value not in definition.choices and not listed:
        return f"Invalid value {value} for configuration {definition.name}"
    return None


def log_overrides(configs: dict[str, str]) -> dict[str, object]:
    """Topic configs in the typed form `storage.LogConfig.with_overrides` takes."""
    out: dict[str, object] = {}
    for name, value in configs.items():
        if name not in LOG_CONFIG_KEYS:
            continue
        definition = TOPIC_CONFIGS[name]
        if definition.type in (TYPE_INT, TYPE_LONG):
            out[name] = int(value)
        elif name == "cleanup.policy":
            out[name] = ",".join(sorted(value.split(",")))
        else:
            out[name] = value
    return out


@dataclass(frozen=True)
class ResolvedConfig:
    """One described config: value, source and the synonyms that could supply it."""

    name: str
    value: str | None
    source: int
    type: int
    read_only: bool = False
    sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, int], ...] = ()


def static_broker_configs(config: BrokerSettings) -> dict[str, str]:
    """Broker keys whose value comes from the command line (`BrokerConfig`)."""
    node = str(config.node_id)
    extra = config.extra
    return {
        **{k: extra[k] for k in (DLQ_AUTO_CREATE, DLQ_TOPIC_PREFIX) if k in extra},
        "node.id": node,
        "broker.id": node,
        "log.dirs": str(config.data_dir),
        "num.partitions": str(config.default_partitions),
        "auto.create.topics.enable": str(config.auto_create_topics).lower(),
        "offsets.topic.num.partitions": str(config.offsets_partitions),
        "group.initial.rebalance.delay.ms": str(config.group_initial_rebalance_delay_ms),
        "socket.request.max.bytes": str(config.max_request_size),
        "max.connections": str(config.max_connections),
        "max.connections.per.ip": str(config.max_connections_per_ip),
        "max.connections.per.ip.overrides": str(config.max_connections_per_ip_overrides),
        "connections.max.idle.ms": str(config.connections_max_idle_ms),
    }


def resolve_topic_config(definition: ConfigDef, overrides: dict[str, str],
                         dynamic: dict[str, str], static: dict[str, str]) -> ResolvedConfig:
    """Kafka's precedence: topic override > dynamic broker > static broker > default."""
    chain: list[tuple[str, str | None, int]] = []
    if definition.name in overrides:
        chain.append((definition.name, overrides[definition.name], SOURCE_TOPIC))
    syn = definition.synonym
    if syn and syn in dynamic:
        chain.append((syn, dynamic[syn], SOURCE_DYNAMIC_BROKER))
    if syn and syn in static:
        chain.append((syn, static[syn], SOURCE_STATIC_BROKER))
    chain.append((syn or definition.name, definition.default, SOURCE_DEFAULT))
    _, value, source = chain[0]
    return ResolvedConfig(definition.name, value, source, definition.type, synonyms=tuple(chain))


def resolve_broker_config(definition: ConfigDef, dynamic: dict[str, str],
                          static: dict[str, str]) -> ResolvedConfig:
    chain: list[tuple[str, str | None, int]] = []
    name = definition.name
    if name in dynamic:
        chain.append((name, dynamic[name], SOURCE_DYNAMIC_BROKER))
    if name in static:
        chain.append((name, static[name], SOURCE_STATIC_BROKER))
    chain.append((name, definition.default, SOURCE_DEFAULT))
    _, value, source = chain[0]
    read_only = name in READ_ONLY_BROKER_CONFIGS
    return ResolvedConfig(name, value, source, definition.type, read_only, synonyms=tuple(chain))


def describe_topic(overrides: dict[str, str], dynamic: dict[str, str],
                   static: dict[str, str]) -> list[ResolvedConfig]:
    return [resolve_topic_config(d, overrides, dynamic, static) for d in TOPIC_CONFIGS.values()]
