"""FindCoordinator (key 10, v0-v6): the node coordinating a group, transaction or
share-partition key: this broker with one node, else the node the ownership map gives the
key's internal partition (`apis.nodes`); with no live node, COORDINATOR_NOT_AVAILABLE.

Mirrors `KafkaApis.handleFindCoordinatorRequest` / `getCoordinator`: single key up to v3,
batched `coordinator_keys` from v4 (KIP-699); key type 0 GROUP, 1 TRANSACTION, 2 SHARE
(v6+, key `group:topicId:partition`, else INVALID_REQUEST); unknown key types ->
INVALID_REQUEST.
"""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import (
    GROUP_KEY,
    SHARE_KEY,
    TRANSACTION_KEY,
    coordinator_node,
    endpoint,
)
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 6

GROUP, TRANSACTION, SHARE = GROUP_KEY, TRANSACTION_KEY, SHARE_KEY


def _share_key_valid(key: str) -> bool:
    parts = key.split(":")
    return (len(parts) == 3 and bool(parts[0]) and len(parts[1]) > 0
            and parts[2].lstrip("-").isdigit() and int(parts[2]) >= 0)


def key_error(key: str, key_type: int, version: int) -> int:
    if key_type == SHARE:
        if version < 6 or not _share_key_valid(key):
            return ErrorCode.INVALID_REQUEST
        return 0
    if key_type not in (GROUP, TRANSACTION):
        return ErrorCode.INVALID_REQUEST
    return 0


def error_response(request: FindCoordinatorRequest, version: int,
                   code: int) -> FindCoordinatorResponse:
    """Kafka's `FindCoordinatorRequest.getErrorResponse`: from v4 the error goes to every
    key, since the top-level error code is gone."""
    if version < 4:
        return FindCoordinatorResponse(error_code=code, node_id=-1, host="", port=-1)
    return FindCoordinatorResponse(coordinators=[
        Coordinator(key=key, node_id=-1, host="", port=-1, error_code=code)
        for key in request.coordinator_keys])


def _auth_error(ctx: RequestContext, key: str, key_type: int) -> int:
    """DESCRIBE on the group or transactional id (`KafkaApis.getCoordinator`)."""
    if key_type == GROUP and not authz.allowed(ctx, authz.Op.DESCRIBE, authz.GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION and not authz.allowed(ctx, authz.Op.DESCRIBE,
                                                     authz.TRANSACTIONAL_ID, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return 0


def _find(ctx: RequestContext, key: str, key_type: int, version: int) -> tuple[int, int, str, int]:
    """(error, node, host, port) of one key."""
    error = _auth_error(ctx, key, key_type) or key_error(key, key_type, version)
    if error:
        return error, -1, "", -1
    node = coordinator_node(ctx, key_type, key)
    found = endpoint(ctx, node)
    if found is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return 0, node, found[0], found[1]


async def handle(ctx: RequestContext, header: RequestHeader, request: FindCoordinatorRequest,
                 version: int) -> FindCoordinatorResponse:
    if request.key_type == SHARE and version >= 6:
        authz.require_cluster(ctx, authz.Op.CLUSTER_ACTION)  # brokers only
    if version < 4:
        error, node, host, port = _find(ctx, request.key, request.key_type, version)
        return FindCoordinatorResponse(error_code=error, node_id=node, host=host, port=port)
    coordinators = []
    for key in request.coordinator_keys:
        error, node, host, port = _find(ctx, key, request.key_type, version)
        coordinators.append(Coordinator(key=key, node_id=node, host=host, port=port,
                                        error_code=error))
    return FindCoordinatorResponse(coordinators=coordinators)
