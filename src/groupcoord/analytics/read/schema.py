"""Field layouts of Kafka's coordinator records, share-state records and consumer protocol.

The analytics reader decodes logs written by groupcoord *or* by a real Kafka broker, so it
carries its own declarative copy of the layouts (from Kafka's ``group-coordinator`` and
``share-coordinator`` record JSON specs, and ``ConsumerProtocolSubscription`` /
``ConsumerProtocolAssignment``). It is read-only and independent of the broker's generated
classes on purpose: tests decode bytes produced by ``groupcoord.logformat`` with it, so the two
implementations check each other.

A field is ``F(name, type, versions, ...)``; ``name`` is the Kafka JSON (camelCase) name that
Kafka's generated ``*JsonConverter`` prints. Types: ``int8 int16 int32 int64 uint16 string
bytes uuid``, ``[]int16``, ``[]int32``, ``[]string``, a nested struct (``fields`` set, ``array`` False) or an
array of structs (``fields`` set, ``array`` True).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ANY = 0x7FFF  # open upper bound of a "N+" version range


@dataclass(frozen=True)
class F:
    """One field of a record struct."""

    name: str
    type: str
    versions: tuple[int, int] = (0, ANY)
    nullable: tuple[int, int] | None = None
    tag: int | None = None
    default: Any = 0
    fields: tuple[F, ...] = field(default_factory=tuple)
    array: bool = False

    def present(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def is_nullable(self, version: int) -> bool:
        return self.nullable is not None and self.nullable[0] <= version <= self.nullable[1]


@dataclass(frozen=True)
class Layout:
    """A key or value struct: its fields and its first flexible version (None = never)."""

    name: str
    fields: tuple[F, ...]
    flexible_from: int | None = None

    def flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from


def _s(name: str, versions: tuple[int, int] = (0, ANY), nullable: bool = False) -> F:
    return F(name, "string", versions, versions if nullable else None, default=None if nullable else "")


def _i32(name: str, default: int = 0) -> F:
    return F(name, "int32", default=default)


def _i64(name: str, default: int = 0) -> F:
    return F(name, "int64", default=default)


def _arr(name: str, *fields: F, nullable: bool = False) -> F:
    return F(name, "struct", nullable=(0, ANY) if nullable else None, fields=fields, array=True,
             default=None if nullable else [])


_GROUP = Layout("GroupKey", (_s("group"),))
_OFFSET_KEY = Layout("OffsetCommitKey", (_s("group"), _s("topic"), _i32("partition")))
_GID = Layout("GroupIdKey", (_s("GroupId"),))
_GID_MID = Layout("GroupMemberKey", (_s("GroupId"), _s("MemberId")))
_TOPIC_PARTS = (F("TopicId", "uuid", default=bytes(16)), F("Partitions", "[]int32", default=[]))
_TOPIC_PARTS_EPOCHS = _TOPIC_PARTS + (
    F("AssignmentEpochs", "[]int32", nullable=(0, ANY), tag=0, default=None),
)
_STATE_BATCH = (
    _i64("FirstOffset"), _i64("LastOffset"), F("DeliveryState", "int8"), F("DeliveryCount", "int16"),
)
_TOPIC_INFO = (F("TopicId", "uuid", default=bytes(16)), _s("TopicName"))
# the fields of every epoch-based group's target assignment metadata and current assignment
_TARGET_EPOCH = (_i32("AssignmentEpoch"), F("AssignmentTimestamp", "int64", tag=0, default=0))
_MEMBER_EPOCHS = (_i32("MemberEpoch"), _i32("PreviousMemberEpoch"), F("State", "int8"))

OFFSET_COMMIT_VALUE = Layout(
    "OffsetCommitValue",
    (
        _i64("offset"),
        F("leaderEpoch", "int32", (3, ANY), default=-1),
        _s("metadata"),
        _i64("commitTimestamp"),
        F("expireTimestamp", "int64", (1, 1), default=-1),
        F("topicId", "uuid", (4, ANY), tag=0, default=bytes(16)),
    ),
    flexible_from=4,
)

GROUP_METADATA_VALUE = Layout(
    "GroupMetadataValue",
    (
        _s("protocolType"),
        _i32("generation"),
        _s("protocol", nullable=True),
        _s("leader", nullable=True),
        F("currentStateTimestamp", "int64", (2, ANY), default=-1),
        F("members", "struct", array=True, default=[], fields=(
            _s("memberId"),
            _s("groupInstanceId", (3, ANY), nullable=True),
            _s("clientId"),
            _s("clientHost"),
            F("rebalanceTimeout", "int32", (1, ANY), default=-1),
            _i32("sessionTimeout"),
            F("subscription", "bytes", default=b""),
            F("assignment", "bytes", default=b""),
        )),
    ),
    flexible_from=4,
)

_FLEX0 = 0

# record type -> (key layout, value layout); value versions are read from the record.
COORDINATOR_RECORDS: dict[int, tuple[Layout, Layout]] = {
    0: (_OFFSET_KEY, Layout("LegacyOffsetCommitValue", (
        _i64("offset"), _s("metadata"), _i64("commitTimestamp")))),
    1: (_OFFSET_KEY, OFFSET_COMMIT_VALUE),
    2: (_GROUP, GROUP_METADATA_VALUE),
    3: (_GID, Layout("ConsumerGroupMetadataValue", (
        _i32("Epoch"), F("MetadataHash", "int64", tag=0, default=0)), _FLEX0)),
    4: (_GID, Layout("ConsumerGroupPartitionMetadataValue", (
        _arr("Topics", F("TopicId", "uuid", default=bytes(16)), _s("TopicName"),
             _i32("NumPartitions"),
             _arr("PartitionMetadata", _i32("Partition"), F("Racks", "[]string", default=[]))),
    ), _FLEX0)),
    5: (_GID_MID, Layout("ConsumerGroupMemberMetadataValue", (
        _s("InstanceId", nullable=True), _s("RackId", nullable=True), _s("ClientId"),
        _s("ClientHost"), F("SubscribedTopicNames", "[]string", default=[]),
        _s("SubscribedTopicRegex", nullable=True), _i32("RebalanceTimeoutMs", -1),
        _s("ServerAssignor", nullable=True),
        F("ClassicMemberMetadata", "struct", nullable=(0, ANY), tag=0, default=None, fields=(
            _i32("SessionTimeoutMs"),
            _arr("SupportedProtocols", _s("Name"), F("Metadata", "bytes", default=b"")),
        )),
    ), _FLEX0)),
    6: (_GID, Layout("ConsumerGroupTargetAssignmentMetadataValue", _TARGET_EPOCH, _FLEX0)),
    7: (_GID_MID, Layout("ConsumerGroupTargetAssignmentMemberValue", (
        _arr("TopicPartitions", *_TOPIC_PARTS),), _FLEX0)),
    8: (_GID_MID, Layout("ConsumerGroupCurrentMemberAssignmentValue", (
        *_MEMBER_EPOCHS,
        _arr("AssignedPartitions", *_TOPIC_PARTS_EPOCHS),
        _arr("PartitionsPendingRevocation", *_TOPIC_PARTS_EPOCHS),
    ), _FLEX0)),
    10: (_GID_MID, Layout("ShareGroupMemberMetadataValue", (
        _s("RackId", nullable=True), _s("ClientId"), _s("ClientHost"),
        F("SubscribedTopicNames", "[]string", default=[])), _FLEX0)),
    11: (_GID, Layout("ShareGroupMetadataValue", (_i32("Epoch"), _i64("MetadataHash")), _FLEX0)),
    12: (_GID, Layout("ShareGroupTargetAssignmentMetadataValue", _TARGET_EPOCH, _FLEX0)),
    13: (_GID_MID, Layout("ShareGroupTargetAssignmentMemberValue", (
        _arr("TopicPartitions", *_TOPIC_PARTS),), _FLEX0)),
    14: (_GID_MID, Layout("ShareGroupCurrentMemberAssignmentValue", (
        *_MEMBER_EPOCHS,
        _arr("AssignedPartitions", *_TOPIC_PARTS)), _FLEX0)),
    15: (_GID, Layout("ShareGroupStatePartitionMetadataValue", (
        _arr("InitializingTopics", *_TOPIC_INFO, F("Partitions", "[]int32", default=[])),
        _arr("InitializedTopics", *_TOPIC_INFO, F("Partitions", "[]int32", default=[])),
        _arr("DeletingTopics", *_TOPIC_INFO),
    ), _FLEX0)),
    16: (Layout("ConsumerGroupRegularExpressionKey", (_s("GroupId"), _s("RegularExpression"))),
         Layout("ConsumerGroupRegularExpressionValue", (
             F("Topics", "[]string", default=[]), _i64("Version"), _i64("Timestamp")), _FLEX0)),
}

_TASK_IDS = (_s("SubtopologyId"), F("Partitions", "[]int32", default=[]))
_TASK_IDS_EPOCHS = _TASK_IDS + (
    F("AssignmentEpochs", "[]int32", nullable=(0, ANY), tag=0, default=None),
)
_KEY_VALUE = (_s("Key"), _s("Value"))
_STREAMS_TOPIC_INFO = (_s("Name"), _i32("Partitions"), F("ReplicationFactor", "int16"),
                       _arr("TopicConfigs", *_KEY_VALUE))

# KIP-1071 streams groups (group-coordinator StreamsGroup*.json, 4.4).
COORDINATOR_RECORDS.update({
    17: (_GID, Layout("StreamsGroupMetadataValue", (
        _i32("Epoch"), _i64("MetadataHash"),
        F("ValidatedTopologyEpoch", "int32", tag=0, default=-1),
        F("LastAssignmentConfigs", "struct", nullable=(0, ANY), array=True, tag=1,
          default=None, fields=_KEY_VALUE),
        F("StoredDescriptionTopologyEpoch", "int32", tag=2, default=-1),
        F("FailedDescriptionTopologyEpoch", "int32", tag=3, default=-1),
    ), _FLEX0)),
    19: (_GID_MID, Layout("StreamsGroupMemberMetadataValue", (
        _s("InstanceId", nullable=True), _s("RackId", nullable=True), _s("ClientId"),
        _s("ClientHost"), _i32("RebalanceTimeoutMs", -1), _i32("TopologyEpoch"),
        _s("ProcessId"),
        F("UserEndpoint", "struct", nullable=(0, ANY), default=None,
          fields=(_s("Host"), F("Port", "uint16"))),
        _arr("ClientTags", *_KEY_VALUE),
    ), _FLEX0)),
    20: (_GID, Layout("StreamsGroupTargetAssignmentMetadataValue", _TARGET_EPOCH, _FLEX0)),
    21: (_GID_MID, Layout("StreamsGroupTargetAssignmentMemberValue", (
        _arr("ActiveTasks", *_TASK_IDS), _arr("StandbyTasks", *_TASK_IDS),
        _arr("WarmupTasks", *_TASK_IDS)), _FLEX0)),
    22: (_GID_MID, Layout("StreamsGroupCurrentMemberAssignmentValue", (
        *_MEMBER_EPOCHS,
        _arr("ActiveTasks", *_TASK_IDS_EPOCHS), _arr("StandbyTasks", *_TASK_IDS),
        _arr("WarmupTasks", *_TASK_IDS),
        _arr("ActiveTasksPendingRevocation", *_TASK_IDS_EPOCHS),
        _arr("StandbyTasksPendingRevocation", *_TASK_IDS),
        _arr("WarmupTasksPendingRevocation", *_TASK_IDS),
    ), _FLEX0)),
    23: (_GID, Layout("StreamsGroupTopologyValue", (
        _i32("Epoch"),
        _arr("Subtopologies", _s("SubtopologyId"), F("SourceTopics", "[]string", default=[]),
             F("SourceTopicRegex", "[]string", default=[]),
             _arr("StateChangelogTopics", *_STREAMS_TOPIC_INFO),
             F("RepartitionSinkTopics", "[]string", default=[]),
             _arr("RepartitionSourceTopics", *_STREAMS_TOPIC_INFO),
             _arr("CopartitionGroups", F("SourceTopics", "[]int16", default=[]),
                  F("SourceTopicRegex", "[]int16", default=[]),
                  F("RepartitionSourceTopics", "[]int16", default=[]))),
    ), _FLEX0)),
})

_SHARE_KEY = Layout("ShareStateKey", (
    _s("GroupId"), F("TopicId", "uuid", default=bytes(16)), _i32("Partition")))

# __share_group_state record type -> (key, value)
SHARE_STATE_RECORDS: dict[int, tuple[Layout, Layout]] = {
    0: (_SHARE_KEY, Layout("ShareSnapshotValue", (
        _i32("SnapshotEpoch"), _i32("StateEpoch"), _i32("LeaderEpoch"), _i64("StartOffset"),
        F("DeliveryCompleteCount", "int32", tag=0, default=-1),
        _i64("CreateTimestamp"), _i64("WriteTimestamp"),
        _arr("StateBatches", *_STATE_BATCH)), _FLEX0)),
    1: (_SHARE_KEY, Layout("ShareUpdateValue", (
        _i32("SnapshotEpoch"), _i32("LeaderEpoch"), _i64("StartOffset"),
        F("DeliveryCompleteCount", "int32", tag=0, default=-1),
        _arr("StateBatches", *_STATE_BATCH)), _FLEX0)),
}

_TOPIC_PARTITION = (_s("topic"), F("partitions", "[]int32", default=[]))

CONSUMER_SUBSCRIPTION = Layout("ConsumerProtocolSubscription", (
    F("topics", "[]string", default=[]),
    F("userData", "bytes", nullable=(0, ANY), default=None),
    F("ownedPartitions", "struct", (1, ANY), array=True, default=[], fields=_TOPIC_PARTITION),
    F("generationId", "int32", (2, ANY), default=-1),
    _s("rackId", (3, ANY), nullable=True),
))

CONSUMER_ASSIGNMENT = Layout("ConsumerProtocolAssignment", (
    F("assignedPartitions", "struct", array=True, default=[], fields=_TOPIC_PARTITION),
    F("userData", "bytes", nullable=(0, ANY), default=None),
))

RECORD_TYPE_NAMES: dict[int, str] = {
    0: "LegacyOffsetCommit", 1: "OffsetCommit", 2: "GroupMetadata",
    3: "ConsumerGroupMetadata", 4: "ConsumerGroupPartitionMetadata",
    5: "ConsumerGroupMemberMetadata", 6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember", 8: "ConsumerGroupCurrentMemberAssignment",
    9: "ShareGroupPartitionMetadata", 10: "ShareGroupMemberMetadata", 11: "ShareGroupMetadata",
    12: "ShareGroupTargetAssignmentMetadata", 13: "ShareGroupTargetAssignmentMember",
    14: "ShareGroupCurrentMemberAssignment", 15: "ShareGroupStatePartitionMetadata",
    16: "ConsumerGroupRegularExpression", 17: "StreamsGroupMetadata",
    18: "StreamsGroupPartitionMetadata", 19: "StreamsGroupMemberMetadata",
    20: "StreamsGroupTargetAssignmentMetadata", 21: "StreamsGroupTargetAssignmentMember",
    22: "StreamsGroupCurrentMemberAssignment", 23: "StreamsGroupTopology",
}
