"""Broker configuration: the knobs `groupcoord serve` exposes, with Kafka's defaults.

Mirrors the subset of Kafka's `KafkaConfig` / `ServerConfigs` a single-node broker needs.
The records are immutable (`security.settings`); dynamic broker configs changed through IncrementalAlterConfigs
live in `server.topics.BrokerDynamicConfig`, not here.
"""

from __future__ import annotations

from groupcoord.security.config import PLAINTEXT, SecurityConfig, parse_protocol_map
from groupcoord.security.settings import Settings, field
from groupcoord.server.connection_quotas import INT_MAX, parse_overrides, validate_limits
from groupcoord.server.idle_expiry import CONNECTIONS_MAX_IDLE_MS_DEFAULT
from groupcoord.storage.fileio import OS_FILE_IO, FileIO

DEFAULT_MAX_REQUEST_SIZE = 100 * 1024 * 1024
FSYNC_POLICIES = ("always", "interval", "never")
AUTHORIZERS = ("none", "standard")
MAX_PORT = 65535
# Groups `/metrics` exports by name unless `--metrics-max-groups` says otherwise.
METRICS_MAX_GROUPS_DEFAULT = 1000


class Listener(Settings):
    """One named host:port endpoint; port 0 means "pick a free port" (used by tests).

    The name is Kafka's listener name (`PLAINTEXT`, `SASL_SSL`, or a custom name mapped to a
    security protocol by `listener.security.protocol.map`)."""

    host: str
    port: int
    name: str = PLAINTEXT

    @classmethod
    def parse(cls, text: str, default_name: str = PLAINTEXT) -> Listener:
        """Parse `NAME://host:port`, or `host:port`, `[v6]:port`, `:port` named
        `default_name` (host defaults to all interfaces)."""
        name, sep, address = text.partition("://")
        if not sep:
            name, address = default_name, text
        elif not name or not name.replace("_", "").isalnum():
            raise ValueError(f"listener name must be letters, digits and '_', got {text!r}")
        host, sep, port = address.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"listener must be [NAME://]host:port, got {text!r}")
        if int(port) > MAX_PORT:
            raise ValueError(f"port {port} of {text!r} is out of range 0-{MAX_PORT}")
        host = host.strip("[]") or "0.0.0.0"
        return cls(host, int(port), name.upper())

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class BrokerConfig(Settings):
    """Static broker settings. Field names follow Kafka's config keys in snake_case."""

    listeners: tuple[Listener, ...] = (Listener("127.0.0.1", 9092),)
    # The old single `HOST:PORT` form, for the first listener.
    advertised_listener: Listener | None = None
    # `NAME://HOST:PORT` per listener name (Kafka's `advertised.listeners`).
    advertised_listeners: tuple[Listener, ...] = ()
    # Kafka's `listener.security.protocol.map` string, on top of the identity map.
    listener_security_protocol_map: str = ""
    security: SecurityConfig = field(default_factory=SecurityConfig)
    data_dir: str = "./data"
    # A PostgreSQL URL (`postgresql://USER@HOST:PORT/DB`): every partition and the topic
    # catalog kept there, shared by the nodes started on it (`server.postgres_node`); the
    # data dir then holds this node's copies and caches. None: everything in the data dir.
    storage: str | None = None
    # A node's partition leases on `storage` run this long past their last renewal
    # (Kafka's broker.session.timeout.ms), renewed every broker.heartbeat.interval.ms.
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    node_id: int = 0
    # Nodes served by this process (`server.cluster_map`): ids node_id .. node_id+nodes-1,
    # node i on each listener's port + i (or a free port for port 0).
    nodes: int = 1
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
    # Groups the metrics endpoint exports by name (docs/metrics.md); rebalance counts of
    # groups past it are kept together.
    metrics_max_groups: int = METRICS_MAX_GROUPS_DEFAULT
    # Whether the coordinator runtimes time their operations (`runtime_metrics`): on when
    # `/metrics` serves them, so a broker without it pays nothing per operation.
    runtime_metrics: bool = False

    def __post_init__(self) -> None:
        if self.authorizer not in AUTHORIZERS:
            raise ValueError(f"authorizer must be one of {AUTHORIZERS}, got {self.authorizer!r}")
        if self.fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync must be one of {FSYNC_POLICIES}, got {self.fsync!r}")
        if self.default_partitions < 1:
            raise ValueError("default_partitions must be >= 1")
        if self.nodes < 1:
            raise ValueError("nodes must be >= 1")
        if self.storage is not None and self.nodes > 1:
            raise ValueError("--storage runs one node per process: start one process per node")
        if not 0 < self.broker_heartbeat_interval_ms < self.broker_session_timeout_ms:
            raise ValueError("broker_heartbeat_interval_ms must be positive and below "
                             "broker_session_timeout_ms")
        if self.offsets_partitions < 1:
            raise ValueError("offsets_partitions must be >= 1")
        if self.metrics_max_groups < 0:
            raise ValueError("metrics_max_groups must be >= 0")
        validate_limits(self.max_connections, self.max_connections_per_ip,
                        parse_overrides(self.max_connections_per_ip_overrides))
        for listener in self.listeners:
            self.security.check_listener(self.security_protocol(listener))
        names = {listener.name for listener in self.listeners}
        for advertised in self.advertised_listeners:
            if advertised.name not in names:
                raise ValueError(f"advertised listener {advertised.name} has no listener")

    def security_protocol(self, listener: Listener) -> str:
        """The security protocol of a listener, by its name."""
        protocol = parse_protocol_map(self.listener_security_protocol_map).get(listener.name)
        if protocol is None:
            raise ValueError(f"listener {listener.name} has no security protocol: add it to "
                             f"the listener security protocol map")
        return protocol

    def advertised_for(self, index: int, bound_port: int) -> Listener:
        """What clients that came in on listener `index` are told to use (Metadata,
        FindCoordinator, DescribeCluster): its advertised listener, else itself."""
        listener = self.listeners[index]
        for advertised in self.advertised_listeners:
            if advertised.name == listener.name:
                return advertised
        if index == 0 and self.advertised_listener is not None:
            return self.advertised_listener
        host = listener.host if listener.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return Listener(host, bound_port, listener.name)

    def advertised(self, bound_port: int | None = None) -> Listener:
        """The address given to clients of the first listener."""
        return self.advertised_for(0, self.listeners[0].port if bound_port is None else bound_port)
