"""Features over the wire (KIP-584): ApiVersions' SupportedFeatures / FinalizedFeatures and
UpdateFeatures (API 57), with Kafka 4.4's rules (`ApiVersionsResponse`,
`FeatureControlManager.updateFeature`, `QuorumController.updateFeatures`)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from acl_support import ADMIN, client_as
from broker_inproc import InProcBroker, RawClient, run

from groupcoord.apis import features
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.update_features import (
    FeatureUpdateKey,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)

FAILED = "The update failed for all features since the following feature had an error: "
# What a Kafka 4.4 broker formatted with its defaults finalizes, for the features whose
# behaviour groupcoord has (the conformance suite compares the two brokers directly).
KAFKA_44_LEVELS = {"group.version": 1, "share.version": 2, "streams.version": 1,
                   "transaction.version": 2}


async def _versions(c: RawClient, version: int) -> ApiVersionsResponse:
    return await c.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                        version, ApiVersionsResponse)


def test_api_versions_report_the_feature_table(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            v4 = await _versions(c, 4)
            assert {f.name: (f.min_version_level, f.max_version_level)
                    for f in v4.finalized_features} == {
                name: (level, level) for name, level in KAFKA_44_LEVELS.items()}
            assert {f.name: (f.min_version, f.max_version) for f in v4.supported_features} == {
                "group.version": (0, 1), "share.version": (0, 2), "streams.version": (0, 1),
                "transaction.version": (0, 2)}
            assert v4.finalized_features_epoch == features.FINALIZED_FEATURES_EPOCH >= 0
            assert v4.zk_migration_ready is False
            # Below v4 a supported range starting at 0 is left out (KAFKA-17492); the
            # finalized levels stay.
            v3 = await _versions(c, 3)
            assert v3.supported_features == []
            assert v3.finalized_features == v4.finalized_features
    run(go())


def test_every_feature_offered_is_finalized_within_its_range() -> None:
    for feature in features.FEATURES:
        assert feature.min_supported <= feature.finalized <= feature.max_supported
        assert feature.finalized > 0 and feature.name not in features.NOT_OFFERED
    assert features.finalized_level("kraft.version") == 0


def _update(*updates: tuple[str, int, int], validate_only: bool = False) -> UpdateFeaturesRequest:
    return UpdateFeaturesRequest(validate_only=validate_only, feature_updates=[
        FeatureUpdateKey(feature=name, max_version_level=level, upgrade_type=kind)
        for name, level, kind in updates])


async def _answer(c: RawClient, request: UpdateFeaturesRequest,
                  version: int = 2) -> tuple[int, str | None]:
    r = await c.call(request, version, UpdateFeaturesResponse)
    return r.error_code, r.error_message


def test_update_features_keeps_levels_and_refuses_changes_as_kafka_words_them(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, node_id=3) as b:
            c = await b.client()
            keep = _update(("transaction.version", 2, 1), ("group.version", 1, 1))
            assert await _answer(c, keep) == (0, None)
            assert await _answer(c, _update(("share.version", 2, 2), validate_only=True)) \
                == (0, None)
            v1 = await c.call(keep, 1, UpdateFeaturesResponse)
            assert [(r.feature, r.error_code, r.error_message) for r in v1.results] == [
                ("transaction.version", 0, "NONE"), ("group.version", 0, "NONE")]
            v2 = await c.call(keep, 2, UpdateFeaturesResponse)
            assert v2.error_code == 0 and v2.results == []
            cases = {
                ("kraft.version", 1, 1): "Invalid update version 1 for feature "
                "kraft.version. Local controller 3 does not support this feature.",
                ("transaction.version", 3, 1): "Invalid update version 3 for feature "
                "transaction.version. Local controller 3 only supports versions 0-2",
                ("group.version", -1, 1): "Invalid update version -1 for feature "
                "group.version. A feature version cannot be less than 0.",
                ("group.version", 0, 1): "Invalid update version 0 for feature group.version. "
                "Can't downgrade the version of this feature without setting the upgrade "
                "type to either safe or unsafe downgrade.",
                ("group.version", 1, 7): "Invalid update version 1 for feature group.version. "
                "The controller does not support the given upgrade type.",
                ("no.such.feature", 0, 1): "Invalid update version 0 for feature "
                "no.such.feature. Feature no.such.feature not found.",
                ("transaction.version", 1, 2): "Invalid update version 1 for feature "
                "transaction.version. This broker's feature levels are fixed; "
                "transaction.version stays at level 2.",
            }
            for update, message in cases.items():
                for validate_only in (False, True):
                    assert await _answer(c, _update(update, validate_only=validate_only)) == (
                        ErrorCode.INVALID_UPDATE_VERSION, FAILED + message), update
            # The first failing feature fails the whole request, whose results are empty.
            mixed = await c.call(_update(("group.version", 1, 1), ("kraft.version", 1, 1)), 1,
                                 UpdateFeaturesResponse)
            assert mixed.error_code == ErrorCode.INVALID_UPDATE_VERSION and mixed.results == []
            assert {f.name: f.max_version_level for f in (await _versions(c, 4))
                    .finalized_features} == KAFKA_44_LEVELS
    run(go())


def test_update_features_needs_cluster_alter(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, authorizer="standard", super_users=ADMIN) as b:
            alice = await client_as(b, "User:alice")
            assert await _answer(alice, _update(("group.version", 1, 1))) == (
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
            admin = await client_as(b, ADMIN)
            assert await _answer(admin, _update(("group.version", 1, 1))) == (0, None)
    run(go())
