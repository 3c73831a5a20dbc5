"""ApiVersions (key 18, v0-v5): the versions this broker serves, from the registry.

Mirrors `KafkaApis.handleApiVersionsRequest` / `ApiVersionsResponse`: a version newer than
we serve is answered at v0 with UNSUPPORTED_VERSION and only the ApiVersions entry (KIP-511);
v3+ requests with an invalid client software name or version get INVALID_REQUEST, and so do
v5 requests naming only one of ClusterId and NodeId (`ApiVersionsRequest.isValid`). A v5
request naming a cluster id (KIP-1242) that is not this broker's cluster id and node id is
answered REBOOTSTRAP_REQUIRED with no api keys (`clusterIdOrNodeIdIsInvalid`); a null
ClusterId means the client does not know whom it reached, and nothing is checked. As
Kafka does for librdkafka (KAFKA-18659), Produce is advertised from version 0 even though
versions below 3 are then refused. From v3 the response carries the broker's features
(`apis/features.py`); below v4 a supported feature whose minimum level is 0 is left out, as
Kafka does for older clients that cannot read such a range (KAFKA-17492).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from groupcoord.apis import features
from groupcoord.apis.api_spec import ApiSpec, version_range
from groupcoord.wire import api_key_numbers
from groupcoord.wire import error_code_numbers as codes
from groupcoord.wire.generated.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)
from groupcoord.wire.headers import RequestHeader

if TYPE_CHECKING:
    # The handlers' protocols: loaded with the other handlers, after the bind.
    from groupcoord.apis.context import RequestContext

MIN_VERSION, MAX_VERSION = 0, 5
# First version carrying the ClusterId and NodeId the client meant to reach (KIP-1242).
FIRST_CLUSTER_CHECK_VERSION = 5
# `ApiVersionsRequestData.nodeId`'s default: no node named.
NO_NODE_ID = -1

# ApiVersionsRequest.isValid: client software name/version pattern.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
PRODUCE_ADVERTISED_MIN = 0
# First version whose supported features may have a minimum level of 0 (KAFKA-17492).
FIRST_LEVEL_ZERO_VERSION = 4


_CACHE: dict[tuple[int, bool], tuple[Mapping[int, ApiSpec], ApiVersionsResponse]] = {}


def api_version_entries(handlers: Mapping[int, ApiSpec]) -> list[ApiVersion]:
    entries = []
    for key in sorted(handlers):
        low, high = version_range(handlers, key)
        low = PRODUCE_ADVERTISED_MIN if key == api_key_numbers.PRODUCE else low
        entries.append(ApiVersion(api_key=key, min_version=low, max_version=high))
    return entries


def unsupported_version_response(handlers: Mapping[int, ApiSpec]) -> ApiVersionsResponse:
    own = [e for e in api_version_entries(handlers) if e.api_key == api_key_numbers.API_VERSIONS]
    return ApiVersionsResponse(error_code=codes.UNSUPPORTED_VERSION, api_keys=own)


async def handle(ctx: RequestContext, header: RequestHeader, request: ApiVersionsRequest,
                 version: int) -> ApiVersionsResponse:
    response = respond(ctx.apis, request, version)
    # KafkaApis.clusterIdOrNodeIdIsInvalid (KIP-1242); the SASL authenticator's pre-login
    # answer (Kafka's SaslServerAuthenticator) checks only isValid, as `respond` does.
    if (response.error_code == codes.NONE and version >= FIRST_CLUSTER_CHECK_VERSION
            and request.cluster_id is not None
            and (request.cluster_id != ctx.config.cluster_id
                 or request.node_id != ctx.node_id)):
        return ApiVersionsResponse(error_code=codes.REBOOTSTRAP_REQUIRED)
    return response


def respond(handlers: Mapping[int, ApiSpec], request: ApiVersionsRequest,
            version: int) -> ApiVersionsResponse:
    """The answer to a decoded ApiVersions request; also used before SASL authentication,
    where Kafka's `SaslServerAuthenticator` answers it outside the request handlers."""
    if version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name)
        and _SOFTWARE.fullmatch(request.client_software_version)
    ):
        return ApiVersionsResponse(error_code=codes.INVALID_REQUEST)
    # ApiVersionsRequest.isValid (4.4): ClusterId and NodeId are named together or not at all.
    if version >= FIRST_CLUSTER_CHECK_VERSION and (
            (request.cluster_id is None) != (request.node_id == NO_NODE_ID)):
        return ApiVersionsResponse(error_code=codes.INVALID_REQUEST)
    return _ok_response(handlers, version >= FIRST_LEVEL_ZERO_VERSION)


def supported_feature_keys(level_zero: bool) -> list[SupportedFeatureKey]:
    """`ApiVersionsResponse.maybeFilterSupportedFeatureKeys`."""
    return [SupportedFeatureKey(name=f.name, min_version=f.min_supported,
                                max_version=f.max_supported)
            for f in features.FEATURES if level_zero or f.min_supported > 0]


def finalized_feature_keys() -> list[FinalizedFeatureKey]:
    return [FinalizedFeatureKey(name=f.name, min_version_level=f.finalized,
                                max_version_level=f.finalized)
            for f in features.FEATURES if f.finalized > 0]


def _ok_response(handlers: Mapping[int, ApiSpec], level_zero: bool) -> ApiVersionsResponse:
    """The table never changes while the broker runs: build each response once."""
    key = (id(handlers), level_zero)
    cached = _CACHE.get(key)
    if cached is None or cached[0] is not handlers:
        cached = (handlers, ApiVersionsResponse(
            error_code=codes.NONE, api_keys=api_version_entries(handlers),
            supported_features=supported_feature_keys(level_zero),
            finalized_features_epoch=features.FINALIZED_FEATURES_EPOCH,
            finalized_features=finalized_feature_keys()))
        _CACHE[key] = cached
    return cached[1]
