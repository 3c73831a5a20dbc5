"""Features and API version ranges, differentially (KIP-584, KIP-511).

ApiVersions v3 and v4: the finalized levels of the features groupcoord implements
(`apis/features.py`), every other feature Kafka finalizes being one that table leaves out by
design, the supported ranges, the epoch and ZkMigrationReady; below v4 no supported range
starting at 0 (KAFKA-17492). UpdateFeatures: a request keeping the levels succeeds (v1 lists
each feature, v2 none) and Kafka's refusals word the same (messages compared in full, the
node id aside). The version range of every API both brokers serve, apart from the ones
`RANGE_DIFFERENCES` names.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from conformance.conversation import Conversation
from conformance.differential import Scenario
from groupcoord.apis import features
from groupcoord.apis.registry import handlers
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.update_features import (
    FeatureUpdateKey,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)

Run = Callable[[Scenario], None]
OFFERED = frozenset(f.name for f in features.FEATURES)
# APIs whose version range differs from Kafka 4.4's, and why (docs/conformance.md).
RANGE_DIFFERENCES = {
    0: "Produce v13 (topic ids, KIP-516) is not served",
    1: "Fetch v18 is not served",
    2: "ListOffsets v11 is not served",
    3: "Metadata v13 is not served",
    76: "ShareGroupHeartbeat v0 is kept for Kafka 3.9's share consumer",
    77: "ShareGroupDescribe v0 is kept for Kafka 3.9's share consumer",
    78: "ShareFetch v0 is kept for Kafka 3.9's share consumer",
    79: "ShareAcknowledge v0 is kept for Kafka 3.9's share consumer",
}


def _versions(c: Conversation, version: int) -> ApiVersionsResponse:
    return c.quiet(ApiVersionsRequest(client_software_name="conformance",
                                      client_software_version="1"), version, ApiVersionsResponse)


def test_api_versions_feature_fields(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        for version in (3, 4):
            answer = _versions(c, version)
            finalized = {f.name: (f.min_version_level, f.max_version_level)
                         for f in answer.finalized_features}
            c.record(f"v{version} finalized features groupcoord implements",
                     {n: r for n, r in finalized.items() if n in OFFERED})
            c.record(f"v{version} every other finalized feature is one left out by design",
                     set(finalized) - OFFERED <= set(features.NOT_OFFERED))
            c.record(f"v{version} supported ranges", {
                f.name: (f.min_version, f.max_version)
                for f in answer.supported_features if f.name in OFFERED})
            c.record(f"v{version} a supported range starts at 0",
                     any(f.min_version == 0 for f in answer.supported_features))
            c.record(f"v{version} epoch, ZkMigrationReady",
                     (answer.finalized_features_epoch >= 0, answer.zk_migration_ready))
    differential(scenario)


def _update(*updates: tuple[str, int, int]) -> UpdateFeaturesRequest:
    return UpdateFeaturesRequest(feature_updates=[
        FeatureUpdateKey(feature=name, max_version_level=level, upgrade_type=kind)
        for name, level, kind in updates])


def test_update_features_answers(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        keep = _update(("transaction.version", 2, 1), ("group.version", 1, 1),
                       ("share.version", 2, 1))
        for version in (0, 1, 2):
            answer = c.quiet(keep, version, UpdateFeaturesResponse)
            c.record(f"v{version} keeping the levels", (
                answer.error_code, answer.error_message,
                sorted((r.feature, r.error_code, r.error_message) for r in answer.results)))
        for update in (("no.such.feature", 1, 1), ("transaction.version", 3, 1),
                       ("group.version", -1, 1), ("group.version", 0, 1),
                       ("group.version", 1, 7), ("no.such.feature", 0, 1),
                       ("group.version", 1, 2)):
            answer = c.quiet(_update(update), 1, UpdateFeaturesResponse)
            message = re.sub(r"Local controller \d+", "Local controller <node>",
                             answer.error_message or "")
            c.record(f"update {update}", (answer.error_code, message, answer.results))
    differential(scenario)


def test_api_version_ranges_of_every_api(differential: Run) -> None:
    served = sorted(set(handlers()) - set(RANGE_DIFFERENCES))

    def scenario(c: Conversation) -> None:
        ranges = {k.api_key: (k.min_version, k.max_version) for k in _versions(c, 3).api_keys}
        c.record("version ranges", {key: ranges.get(key) for key in served})
    differential(scenario)
