"""The broker's features (KIP-584): what it supports and the levels in force.

The one definition of them: ApiVersions reports them (SupportedFeatures, FinalizedFeatures,
FinalizedFeaturesEpoch; Kafka's `ApiVersionManager.features`, what the Java Admin's
`describeFeatures` reads), and UpdateFeatures validates against them. Clients read behaviour
from the finalized levels: the Java producer runs KIP-890 part 2 transactions only when
`transaction.version` >= 2 is finalized, so every level finalized here is one groupcoord
implements.

The levels are those of a Kafka 4.4 broker formatted with its defaults (`share.version=2`,
its latest production level: share groups with the KIP-1191 dead-letter queue; the reference
broker of the conformance suite), for the features whose behaviour groupcoord has. Kafka 4.4
also finalizes features that describe machinery groupcoord does not have; they are left out
(a feature at level 0 is not listed, as Kafka omits it) and `NOT_OFFERED` says why.
Levels are fixed for the life of the process, so one epoch serves.
"""

from __future__ import annotations

from types import MappingProxyType

from groupcoord.security.settings import Settings


class Feature(Settings):
    """A feature's supported range and its finalized level (`Feature` / `FeatureVersion`).
    (A `Settings` record: ApiVersions needs it before the broker binds its listeners, where
    a dataclass costs its generated code and a NamedTuple its `exec`.)"""

    name: str
    min_supported: int
    max_supported: int
    finalized: int
    enables: str


# `TransactionVersion.TV_2`: the level of KIP-890 part 2, which a request version implies
# (EndTxn v5+, AddPartitionsToTxn v4+, Produce v12+, TxnOffsetCommit v5+).
TRANSACTION_VERSION = "transaction.version"
TRANSACTION_VERSION_2 = 2
# `ShareVersion.SV_2`: the level from which share groups have a dead-letter queue.
SHARE_VERSION = "share.version"
SHARE_VERSION_DLQ = 2

FEATURES: tuple[Feature, ...] = (
    Feature("group.version", 0, 1, 1,
            "KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe)"),
    Feature(SHARE_VERSION, 0, SHARE_VERSION_DLQ, SHARE_VERSION_DLQ,
            "KIP-932 share groups (ShareGroupHeartbeat, ShareFetch, ShareAcknowledge, "
            "share-group offsets admin); at 2 the KIP-1191 dead-letter queue"),
    Feature("streams.version", 0, 1, 1,
            "KIP-1071 streams groups (StreamsGroupHeartbeat, StreamsGroupDescribe)"),
    Feature(TRANSACTION_VERSION, 0, TRANSACTION_VERSION_2, TRANSACTION_VERSION_2,
            "KIP-890 part 2 transactions: an epoch bump at every EndTxn (v5), partitions "
            "added by Produce v12+ and TxnOffsetCommit v5+ without AddPartitionsToTxn/"
            "AddOffsetsToTxn, flexible transaction-log records"),
)

# Kafka 4.4 finalizes these as well; each names machinery groupcoord does not have.
NOT_OFFERED: MappingProxyType[str, str] = MappingProxyType({
    "metadata.version": "the KRaft metadata log's format; groupcoord keeps no metadata log",
    "kraft.version": "the KRaft controller quorum's format (KIP-853); there is no quorum",
    "eligible.leader.replicas.version": "eligible leader replicas (KIP-966); one replica, "
                                        "no leader election",
})

BY_NAME: MappingProxyType[str, Feature] = MappingProxyType({f.name: f for f in FEATURES})

# The epoch of the finalized levels; they never change while the broker runs.
FINALIZED_FEATURES_EPOCH = 0


def finalized_level(name: str) -> int:
    """The level in force (0 for a feature not offered, as Kafka reads a missing one)."""
    feature = BY_NAME.get(name)
    return feature.finalized if feature is not None else 0
