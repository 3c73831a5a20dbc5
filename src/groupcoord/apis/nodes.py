"""Which node answers what, for the handlers: one node serves everything; with several
(`ctx.cluster`, Kafka's `MetadataCache` view of leaders and coordinators) a request for a
partition or group another node serves gets Kafka's NOT_LEADER_OR_FOLLOWER or
NOT_COORDINATOR."""

from __future__ import annotations

from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode

# FindCoordinator key types (Kafka's `FindCoordinatorRequest.CoordinatorType`).
GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2


def broker_endpoints(ctx: RequestContext) -> list[tuple[int, str, int]]:
    """(node id, host, port) of every live node on the request's listener."""
    cluster = ctx.cluster
    if cluster is None:
        return [(ctx.config.node_id, ctx.advertised_host, ctx.advertised_port)]
    listener = ctx.listener_name
    out = []
    for node in cluster.live_nodes():
        endpoint = node.endpoints.get(listener)
        if endpoint is not None:
            out.append((node.node_id, endpoint.host, endpoint.port))
    return out


def endpoint(ctx: RequestContext, node_id: int) -> tuple[str, int] | None:
    """The node's host and port on the request's listener; None when it is stopped."""
    cluster = ctx.cluster
    if cluster is None:
        return ctx.advertised_host, ctx.advertised_port
    found = cluster.endpoint(node_id, ctx.listener_name)
    return None if found is None else (found.host, found.port)


def leads(ctx: RequestContext, topic: str, partition: int) -> bool:
    """Whether the request's node leads the partition."""
    cluster = ctx.cluster
    return cluster is None or cluster.owner(topic, partition) == ctx.node_id


def current_epoch_error(ctx: RequestContext, topic: str, partition: int,
                        current_leader_epoch: int) -> int | None:
    """Kafka's check of a request's current leader epoch against the partition's (-1: no
    check): FENCED_LEADER_EPOCH if older, UNKNOWN_LEADER_EPOCH if newer, else None."""
    cluster = ctx.cluster
    epoch = 0 if cluster is None else cluster.leader_epoch(topic, partition)
    if current_leader_epoch < 0 or current_leader_epoch == epoch:
        return None
    return (ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < epoch
            else ErrorCode.UNKNOWN_LEADER_EPOCH)


def coordinator_node(ctx: RequestContext, key_type: int, key: str) -> int:
    """The node coordinating a FindCoordinator key (-1: no live node)."""
    cluster = ctx.cluster
    return ctx.config.node_id if cluster is None else cluster.coordinator(key_type, key)


def coordinates(ctx: RequestContext, key_type: int, key: str) -> bool:
    """Whether the request's node coordinates the key."""
    cluster = ctx.cluster
    return cluster is None or cluster.coordinator(key_type, key) == ctx.node_id
