"""UpdateFeatures (key 57, v0-v2): change finalized feature levels (KIP-584).

Mirrors `ControllerApis.handleUpdateFeatures` (CLUSTER ALTER, else CLUSTER_AUTHORIZATION_FAILED)
and `FeatureControlManager.updateFeature`'s checks, in order, for a single node that is its
own controller: an unknown upgrade type, a level below 0, a level outside what this node
supports ("Local controller <id> does not support this feature." / "... only supports
versions [a, b]"), a downgrade sent as an upgrade and an upgrade sent as a downgrade are
INVALID_UPDATE_VERSION with Kafka's message. The first failing feature fails the request:
"The update failed for all features since the following feature had an error: ...", and no
per-feature results. A request that keeps every level (validate-only or not) succeeds;
v0-1 then list each feature with NONE (message "NONE"), v2 lists none
(`QuorumController.updateFeatures`).

groupcoord's levels are fixed for the life of the process (`apis/features.py`: each level is
behaviour the code has, not a switch), so a valid request that would change a level is
refused with INVALID_UPDATE_VERSION and a message saying so, where Kafka would write a
FeatureLevelRecord.
"""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis import features
from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.update_features import (
    UpdatableFeatureResult,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 2
# `FeatureUpdate.UpgradeType` codes (v1+). The controller reads the field even at v0, whose
# AllowDowngrade it never sees, so a v0 update is always an upgrade.
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
_KNOWN_UPGRADE_TYPES = (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE)
# First version whose successful response carries no per-feature results.
FIRST_NO_RESULTS_VERSION = 2
# `Errors.NONE.message()`: an error without an exception is described by its name.
NONE_MESSAGE = "NONE"
FAILED_PREFIX = "The update failed for all features since the following feature had an error: "


def _range_reason(node_id: int, name: str, level: int) -> str | None:
    """`QuorumFeatures.reasonNotSupported` for this node's supported range."""
    feature = features.BY_NAME.get(name)
    low, high = (feature.min_supported, feature.max_supported) if feature else (0, 0)
    if low <= level <= high:
        return None
    what = f"Local controller {node_id}"
    if high == 0:
        return f"{what} does not support this feature."
    return f"{what} only supports versions {low}-{high}"  # `VersionRange.toString`


def update_error(node_id: int, name: str, level: int, upgrade_type: int) -> str | None:
    """The INVALID_UPDATE_VERSION message for one feature update, or None when it keeps the
    level in force."""
    def invalid(why: str) -> str:
        return f"Invalid update version {level} for feature {name}. {why}"

    if upgrade_type not in _KNOWN_UPGRADE_TYPES:
        return invalid("The controller does not support the given upgrade type.")
    if level < 0:
        return invalid("A feature version cannot be less than 0.")
    reason = _range_reason(node_id, name, level)
    if reason is not None:
        return invalid(reason)
    if name not in features.BY_NAME and name not in features.NOT_OFFERED:
        return invalid(f"Feature {name} not found.")  # `Feature.featureFromName`
    current = features.finalized_level(name)
    if level < current and upgrade_type == UPGRADE:
        return invalid("Can't downgrade the version of this feature without setting the "
                       "upgrade type to either safe or unsafe downgrade.")
    if level > current and upgrade_type != UPGRADE:
        return invalid("Can't downgrade to a newer version.")
    if level != current:
        return invalid(f"This broker's feature levels are fixed; {name} stays at level "
                       f"{current}.")
    return None


async def handle(ctx: RequestContext, header: RequestHeader, request: UpdateFeaturesRequest,
                 version: int) -> UpdateFeaturesResponse:
    if not authz.allowed_on_cluster(ctx, authz.Op.ALTER):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return UpdateFeaturesResponse(error_code=code, error_message=authz.MESSAGES[code])
    for update in request.feature_updates:
        message = update_error(ctx.config.node_id, update.feature, update.max_version_level,
                               int(update.upgrade_type))
        if message is not None:
            return UpdateFeaturesResponse(error_code=ErrorCode.INVALID_UPDATE_VERSION,
                                          error_message=FAILED_PREFIX + message)
    results = [] if version >= FIRST_NO_RESULTS_VERSION else [
        UpdatableFeatureResult(feature=u.feature, error_code=0, error_message=NONE_MESSAGE)
        for u in request.feature_updates]
    return UpdateFeaturesResponse(error_code=0, error_message=None, results=results)
