"""Broker configuration: the knobs `groupcoord serve` exposes, with Kafka's defaults.

Mirrors the subset of Kafka's `KafkaConfig` / `ServerConfigs` a single-node broker needs.
The dataclass is immutable; dynamic broker configs changed through IncrementalAlterConfigs
live in `server.topics.BrokerDynamicConfig`, not here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from groupcoord.server.connection_quotas import INT_MAX, parse_overrides, validate_limits
from groupcoord.server.idle_expiry import CONNECTIONS_MAX_IDLE_MS_DEFAULT
from groupcoord.storage.fileio import OS_FILE_IO, FileIO

DEFAULT_MAX_REQUEST_SIZE = 100 * 1024 * 1024
FSYNC_POLICIES = ("always", "interval", "never")
AUTHORIZERS = ("none", "standard")


@dataclass(frozen=True)
class Listener:
    """One host:port pair; port 0 means "pick a free port" (used by tests)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Listener:
        """Parse `host:port`, `[v6]:port` or `:port` (host defaults to all interfaces)."""
        host, sep, port = text.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"listener must be host:port, got {text!r}")
        host = host.strip("[]") or "0.0.0.0"
        return cls(host, int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class BrokerConfig:
    """Static broker settings. Field names follow Kafka's config keys in snake_case."""

    listeners: tuple[Listener, ...] = (Listener("127.0.0.1", 9092),)
    advertised_listener: Listener | None = None
    data_dir: str = "./data"
    node_id: int = 0
    cluster_id: str = "groupcoord-cluster-0001"
    fsync: str = "interval"
    fsync_interval_ms: int = 1000
    auto_create_topics: bool = True
    default_partitions: int = 1
    group_initial_rebalance_delay_ms: int = 3000
    offsets_partitions: int = 50
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE
    message_max_bytes: int = 1048588
    fetch_max_sessions: int = 1000
    max_connections: int = INT_MAX
    max_connections_per_ip: int = INT_MAX
    # Kafka's string form, `host:count,host:count`.
    max_connections_per_ip_overrides: str = ""
    connections_max_idle_ms: int = CONNECTIONS_MAX_IDLE_MS_DEFAULT
    rack: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    # Where storage's writes go: the disk, or a fault injector in tests and the test broker.
    file_io: FileIO = OS_FILE_IO
    # Authorization (Kafka's `authorizer.class.name`, `super.users`,
    # `allow.everyone.if.no.acl.found`): "none" allows everything, "standard" enforces ACLs.
    authorizer: str = "none"
    super_users: str = ""
    allow_everyone_if_no_acl_found: bool = False

    def __post_init__(self) -> None:
        if self.authorizer not in AUTHORIZERS:
            raise ValueError(f"authorizer must be one of {AUTHORIZERS}, got {self.authorizer!r}")
        if self.fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync must be one of {FSYNC_POLICIES}, got {self.fsync!r}")
        if self.default_partitions < 1:
            raise ValueError("default_partitions must be >= 1")
        if self.offsets_partitions < 1:
            raise ValueError("offsets_partitions must be >= 1")
        validate_limits(self.max_connections, self.max_connections_per_ip,
                        parse_overrides(self.max_connections_per_ip_overrides))

    def advertised(self, bound_port: int | None = None) -> Listener:
        """The address clients are told to use (Metadata, FindCoordinator)."""
        if self.advertised_listener is not None:
            return self.advertised_listener
        first = self.listeners[0]
        host = first.host if first.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return Listener(host, bound_port if bound_port is not None else first.port)
