"""Group coordinator settings with Kafka's defaults (`GroupCoordinatorConfig`:
broker-level classic, offsets, KIP-848 consumer-group and KIP-932 share-group settings).

`from_properties` reads Kafka's dotted config names (`group.consumer.session.timeout.ms`),
so the server can pass broker properties through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

INT32_MAX = 2**31 - 1

MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")

# Not configurable in Kafka either (`CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`).
CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = INT32_MAX
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 104_857_600
    offsets_topic_compression_codec: int = 0
    offsets_load_buffer_size: int = 5_242_880
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4_096
    offsets_commit_timeout_ms: int = 5_000
    new_member_join_timeout_ms: int = CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS
    # KIP-848 consumer groups.
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_max_size: int = INT32_MAX
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")
    group_consumer_migration_policy: str = "bidirectional"
    group_consumer_regex_refresh_interval_ms: int = 600_000
    # KIP-1263: a new target at most once per interval (Kafka 4.4's default); joins in
    # between only bump the group epoch and share the next computation.
    group_consumer_assignment_interval_ms: int = 1_000
    group_consumer_min_assignment_interval_ms: int = 0
    group_consumer_max_assignment_interval_ms: int = 15_000
    # `group.consumer.assignor.offload.enable`: the target is computed on a worker thread
    # and written by a later operation if the group epoch is still the one it was computed
    # for. Off by default, as Kafka 4.4 behaves: there the (internal) config defaults to
    # true, but `GroupMetadataManager.consumerGroupAssignorOffloadEnable` is never called
    # and `maybeUpdateTargetAssignment` runs the assignor within the heartbeat, so the
    # target comes with the heartbeat that triggered it.
    group_consumer_assignor_offload_enable: bool = False
    # Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS constant (10 s), made settable so tests
    # and small deployments can see new topics sooner.
    group_consumer_regex_batch_refresh_min_interval_ms: int = 10_000
    # KIP-932 share groups (and KIP-1263's assignment interval).
    group_share_session_timeout_ms: int = 45_000
    group_share_heartbeat_interval_ms: int = 5_000
    group_share_max_size: int = 200
    group_share_assignment_interval_ms: int = 1_000
    # How long an initializing share-partition waits before a heartbeat retries it (Kafka's
    # internal `group.share.initialize.retry.interval.ms`; at least offsets.commit.timeout.ms).
    group_share_initialize_retry_interval_ms: int = 30_000
    # `ShareGroupConfig`: the broker defaults of a share-partition's settings, and the
    # range a group's `share.record.lock.duration.ms` must fall in.
    group_share_record_lock_duration_ms: int = 30_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_delivery_count_limit: int = 5
    group_share_partition_max_record_locks: int = 2_000
    # The range a group's `share.partition.max.record.locks` must fall in (`ShareGroupConfig`).
    group_share_min_partition_max_record_locks: int = 100
    group_share_max_partition_max_record_locks: int = 4_000
    group_share_max_share_sessions: int = 2_000
    # KIP-1191 (`GroupCoordinatorConfig`, Kafka 4.4): whether a missing DLQ topic is
    # created, and the prefix every DLQ topic name must have ("" = any name).
    errors_deadletterqueue_auto_create_topics_enable: bool = False
    errors_deadletterqueue_topic_name_prefix: str = "dlq."
    # KIP-1071 streams groups.
    group_streams_session_timeout_ms: int = 45_000
    group_streams_min_session_timeout_ms: int = 45_000
    group_streams_max_session_timeout_ms: int = 60_000
    group_streams_heartbeat_interval_ms: int = 5_000
    group_streams_min_heartbeat_interval_ms: int = 5_000
    group_streams_max_heartbeat_interval_ms: int = 15_000
    group_streams_max_size: int = INT32_MAX
    group_streams_num_standby_replicas: int = 0
    group_streams_max_standby_replicas: int = 2
    group_streams_initial_rebalance_delay_ms: int = 3_000
    # KIP-1263's assignment interval (Kafka 4.3+): at most one new target per interval.
    group_streams_assignment_interval_ms: int = 1_000
    group_streams_min_assignment_interval_ms: int = 0
    group_streams_max_assignment_interval_ms: int = 15_000
    group_streams_task_offset_interval_ms: int = 60_000
    group_streams_acceptable_recovery_lag: int = 10_000
    group_streams_rack_aware_assignment_tags: tuple[str, ...] = ()

    @property
    def share_initialize_retry_interval_ms(self) -> int:
        """`GroupCoordinatorConfig.shareGroupInitializeRetryIntervalMs`."""
        return max(self.group_share_initialize_retry_interval_ms, self.offsets_commit_timeout_ms)

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    def migration_allows(self, direction: str) -> bool:
        """`direction` is "upgrade" or "downgrade" (`ConsumerGroupMigrationPolicy`)."""
        policy = self.group_consumer_migration_policy
        return policy == "bidirectional" or policy == direction

    @classmethod
    def property_names(cls) -> dict[str, str]:
        """Kafka's name of each setting (`group.max.size`) -> its field (`group_max_size`)."""
        return {name.replace("_", "."): name for name in cls.__dataclass_fields__}

    @classmethod
    def from_properties(cls, props: Mapping[str, str], **overrides: object
                        ) -> GroupCoordinatorConfig:
        """Build from Kafka-named properties; unknown names are ignored."""
        values: dict[str, object] = dict(overrides)
        for key, name in cls.property_names().items():
            text = props.get(key)
            if text is None:
                continue
            if name in ("group_consumer_assignors", "group_streams_rack_aware_assignment_tags"):
                values[name] = tuple(a.strip() for a in text.split(",") if a.strip())
            elif name == "group_consumer_migration_policy":
                values[name] = text.strip().lower()
            elif name in ("errors_deadletterqueue_auto_create_topics_enable",
                          "group_consumer_assignor_offload_enable"):
                values[name] = _boolean(name, text)
            elif name == "errors_deadletterqueue_topic_name_prefix":
                values[name] = text.strip()
            else:
                values[name] = _integer(name, text)
        config = cls(**values)  # type: ignore[arg-type]
        config.validate()
        return config

    def validate(self) -> None:
        """Kafka's start-up checks of the group settings (`GroupCoordinatorConfig`)."""
        # A limit below one would let the first member of an Empty group over it.
        _within("group.max.size", self.group_max_size, 1, INT32_MAX)
        _within("group.consumer.max.size", self.group_consumer_max_size, 1, INT32_MAX)
        _within("group.share.max.size", self.group_share_max_size, 1, 1000)
        _within("group.consumer.session.timeout.ms", self.group_consumer_session_timeout_ms,
               self.group_consumer_min_session_timeout_ms,
               self.group_consumer_max_session_timeout_ms)
        _within("group.consumer.heartbeat.interval.ms", self.group_consumer_heartbeat_interval_ms,
               self.group_consumer_min_heartbeat_interval_ms,
               self.group_consumer_max_heartbeat_interval_ms)
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ValueError("group.consumer.heartbeat.interval.ms must be less than "
                             "group.consumer.session.timeout.ms")
        _within("group.consumer.assignment.interval.ms",
               self.group_consumer_assignment_interval_ms,
               self.group_consumer_min_assignment_interval_ms,
               self.group_consumer_max_assignment_interval_ms)
        if self.group_consumer_migration_policy not in MIGRATION_POLICIES:
            raise ValueError(f"group.consumer.migration.policy must be one of "
                             f"{', '.join(MIGRATION_POLICIES)}")
        if not self.group_consumer_assignors:
            raise ValueError("group.consumer.assignors must name at least one assignor")
        self._validate_share()
        self._validate_streams()

    def _validate_streams(self) -> None:
        """`GroupCoordinatorConfig`'s streams-group checks."""
        _within("group.streams.session.timeout.ms", self.group_streams_session_timeout_ms,
               self.group_streams_min_session_timeout_ms,
               self.group_streams_max_session_timeout_ms)
        _within("group.streams.heartbeat.interval.ms", self.group_streams_heartbeat_interval_ms,
               self.group_streams_min_heartbeat_interval_ms,
               self.group_streams_max_heartbeat_interval_ms)
        _within("group.streams.max.size", self.group_streams_max_size, 1, INT32_MAX)
        _within("group.streams.num.standby.replicas", self.group_streams_num_standby_replicas,
               0, self.group_streams_max_standby_replicas)
        tags = self.group_streams_rack_aware_assignment_tags
        if len(set(tags)) != len(tags):
            raise ValueError("group.streams.rack.aware.assignment.tags must not contain "
                             "duplicate tag keys.")
        _within("group.streams.assignment.interval.ms", self.group_streams_assignment_interval_ms,
               self.group_streams_min_assignment_interval_ms,
               self.group_streams_max_assignment_interval_ms)
        if self.group_streams_initial_rebalance_delay_ms < 0:
            raise ValueError("group.streams.initial.rebalance.delay.ms must be at least 0")

    def _validate_share(self) -> None:
        """`ShareGroupConfig.CONFIG_DEF` ranges and `ShareGroupConfig.validate`."""
        _within("group.share.record.lock.duration.ms", self.group_share_record_lock_duration_ms,
                1_000, 3_600_000)
        _within("group.share.min.record.lock.duration.ms",
                self.group_share_min_record_lock_duration_ms, 1_000, 30_000)
        _within("group.share.max.record.lock.duration.ms",
                self.group_share_max_record_lock_duration_ms, 30_000, 3_600_000)
        _within("group.share.delivery.count.limit", self.group_share_delivery_count_limit, 2, 10)
        _within("group.share.partition.max.record.locks",
                self.group_share_partition_max_record_locks, 100, 10_000)
        _within("group.share.min.partition.max.record.locks",
                self.group_share_min_partition_max_record_locks, 100, 2_000)
        _within("group.share.max.partition.max.record.locks",
                self.group_share_max_partition_max_record_locks, 2_000, 10_000)
        _within("group.share.max.share.sessions", self.group_share_max_share_sessions, 1,
                INT32_MAX)
        _within("group.share.initialize.retry.interval.ms",
                self.group_share_initialize_retry_interval_ms, 1, INT32_MAX)
        _within("group.share.record.lock.duration.ms", self.group_share_record_lock_duration_ms,
                self.group_share_min_record_lock_duration_ms,
                self.group_share_max_record_lock_duration_ms)
        # `ShareGroupConfig.validate`'s order and messages.
        if self.group_share_max_partition_max_record_locks < \
                self.group_share_partition_max_record_locks:
            raise ValueError("group.share.max.partition.max.record.locks must be greater than "
                             "or equal to group.share.partition.max.record.locks")
        if self.group_share_partition_max_record_locks < \
                self.group_share_min_partition_max_record_locks:
            raise ValueError("group.share.partition.max.record.locks must be greater than or "
                             "equal to group.share.min.partition.max.record.locks")


def _within(name: str, value: int, low: int, high: int) -> None:
    """Kafka's `ConfigDef.Range` check and message (its bounds here may come from other
    settings, as `GroupCoordinatorConfig`'s start-up checks compare them)."""
    if value < low:
        raise ValueError(f"Invalid value {value} for configuration {name}: "
                         f"Value must be at least {low}")
    if value > high:
        raise ValueError(f"Invalid value {value} for configuration {name}: "
                         f"Value must be no more than {high}")


def _integer(name: str, text: str) -> int:
    """`ConfigDef.parseType` of an INT or LONG setting."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"Invalid value {text} for configuration {name.replace('_', '.')}: "
                         "Not a number of type INT") from None


def _boolean(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"Invalid value {text} for configuration {name.replace('_', '.')}")
    return value == "true"
