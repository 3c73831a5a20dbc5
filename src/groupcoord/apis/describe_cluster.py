"""DescribeCluster (key 60, v0-v2): this broker, the cluster id and the controller.

Mirrors `KafkaApis.handleDescribeCluster` / `AuthHelper.computeDescribeClusterResponse`:
a broker listener answers endpoint type BROKER (1) only; asking it for controllers ->
MISMATCHED_ENDPOINT_TYPE. The brokers are the live nodes (`apis.nodes`), never fenced.
"""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.common import UNKNOWN_OPERATIONS
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import broker_endpoints
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 2
ENDPOINT_BROKER = 1


async def handle(ctx: RequestContext, header: RequestHeader, request: DescribeClusterRequest,
                 version: int) -> DescribeClusterResponse:
    if version >= 1 and request.endpoint_type != ENDPOINT_BROKER:
        return DescribeClusterResponse(
            error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted "
                          "an endpoint of type CONTROLLER",
            endpoint_type=request.endpoint_type, cluster_id=ctx.config.cluster_id)
    ops = UNKNOWN_OPERATIONS
    if request.include_cluster_authorized_operations:
        ops = authz.operations(ctx, authz.CLUSTER, authz.CLUSTER_NAME) \
            if authz.allowed_on_cluster(ctx, authz.Op.DESCRIBE, log_if_denied=False) else 0
    brokers = [DescribeClusterBroker(broker_id=node, host=host, port=port,
                                     rack=ctx.config.rack, is_fenced=False)
               for node, host, port in broker_endpoints(ctx)]
    cluster = ctx.cluster
    return DescribeClusterResponse(
        error_code=0, endpoint_type=ENDPOINT_BROKER, cluster_id=ctx.config.cluster_id,
        controller_id=ctx.config.node_id if cluster is None else cluster.controller_id(),
        brokers=brokers, cluster_authorized_operations=ops)
