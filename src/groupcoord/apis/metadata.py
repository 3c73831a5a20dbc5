"""Metadata (key 3, v0-v12): brokers, cluster id, controller, topics and partitions.

Mirrors `KafkaApis.handleTopicMetadataRequest` + `MetadataCache.getTopicMetadata`: with one
node this broker leads every partition at leader epoch 0 with itself as the only replica;
with several (`ctx.cluster`) the brokers are the live nodes on the request's listener and
each partition's leader (its only replica) is the node the ownership map gives it. Null topics (v1+; an empty list in v0) means all topics. Unknown topics are
auto-created when the request (v4+) and the broker allow it; bad names get
INVALID_TOPIC_EXCEPTION, unknown topic ids UNKNOWN_TOPIC_ID (v10+).

Under an authorizer: "all topics" lists only topics the principal may describe; named
topics it may not describe answer TOPIC_AUTHORIZATION_FAILED without disclosing whether
they exist, and so do missing topics it may not create (CREATE on the cluster or on the
topic); Kafka's order is kept (unknown ids, found topics, create-denied, describe-denied).
Authorized operations are the principal's (cluster operations are 0 without DESCRIBE).
"""

from __future__ import annotations

from typing import Any

from groupcoord.apis import authorization as authz
from groupcoord.apis.common import UNKNOWN_OPERATIONS, auto_create, topic_name_error
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import broker_endpoints
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 12
UUID_ZERO = bytes(16)


def _partition(index: int, node: int, epoch: int) -> MetadataResponsePartition:
    if node < 0:
        # Nobody leads it now (a lease lapsed and not yet taken): Kafka's answer for a
        # partition without a live leader; the client asks again.
        return MetadataResponsePartition(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE, partition_index=index, leader_id=-1,
            leader_epoch=-1, replica_nodes=[], isr_nodes=[], offline_replicas=[])
    replicas = [node]
    return MetadataResponsePartition(error_code=0, partition_index=index, leader_id=node,
                                     leader_epoch=epoch, replica_nodes=replicas,
                                     isr_nodes=replicas, offline_replicas=[])


def topic_metadata(ctx: RequestContext, topic: Any, with_ops: bool) -> MetadataResponseTopic:
    cluster = ctx.cluster
    if cluster is None:
        node = ctx.config.node_id
        partitions = [_partition(p, node, 0) for p in range(topic.num_partitions)]
    else:
        partitions = [_partition(p, cluster.owner(topic.name, p),
                                 cluster.leader_epoch(topic.name, p))
                      for p in range(topic.num_partitions)]
    return MetadataResponseTopic(
        error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.internal,
        partitions=partitions,
        topic_authorized_operations=(authz.operations(ctx, authz.TOPIC, topic.name) if with_ops
                                     else UNKNOWN_OPERATIONS))


def error_response(request: MetadataRequest, version: int, code: int) -> MetadataResponse:
    """`MetadataRequest.getErrorResponse`: every requested topic (a null name as "") with
    the error, no partitions; the top-level code only where the version has it."""
    return MetadataResponse(topics=[
        MetadataResponseTopic(name=t.name or "", topic_id=t.topic_id, error_code=code,
                              is_internal=False, partitions=[])
        for t in request.topics or ()], error_code=code)


def _error_topic(code: int, name: str | None, topic_id: bytes = UUID_ZERO) -> MetadataResponseTopic:
    return MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id)


def _lookup(ctx: RequestContext, req_topic: Any, allow_create: bool,
            with_ops: bool) -> MetadataResponseTopic:
    name = req_topic.name
    if name is None:
        topic = ctx.topics.by_id(req_topic.topic_id)
        if topic is None:
            return _error_topic(ErrorCode.UNKNOWN_TOPIC_ID, None, req_topic.topic_id)
        return topic_metadata(ctx, topic, with_ops)
    topic = ctx.topics.get(name)
    if topic is None:
        if topic_name_error(name):
            return _error_topic(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
        topic = auto_create(ctx, name) if allow_create else None
        if topic is None:
            return _error_topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    return topic_metadata(ctx, topic, with_ops)


def _lookup_authorized(ctx: RequestContext, wanted: list[Any], allow_create: bool,
                       with_ops: bool) -> list[MetadataResponseTopic]:
    unknown_ids: list[MetadataResponseTopic] = []
    named: list[tuple[Any, str]] = []
    for t in wanted:
        if t.name is None:
            topic = ctx.topics.by_id(t.topic_id)
            if topic is None:
                unknown_ids.append(_error_topic(ErrorCode.UNKNOWN_TOPIC_ID, None, t.topic_id))
                continue
            named.append((t, topic.name))
        else:
            named.append((t, t.name))
    visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC, (n for _, n in named))
    no_create: set[str] = set()
    missing = {n for _, n in named if n in visible and ctx.topics.get(n) is None} \
        if allow_create and ctx.config.auto_create_topics else set()
    if missing and not authz.allowed_on_cluster(ctx, authz.Op.CREATE, log_if_denied=False):
        no_create = missing - authz.authorized(ctx, authz.Op.CREATE, authz.TOPIC, missing)
    found = [_lookup(ctx, t, allow_create, with_ops) for t, n in named
             if n in visible and n not in no_create]
    denied = [_error_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, n)
              for n in dict.fromkeys(n for _, n in named if n in no_create)]
    for t, n in named:
        if n not in visible:  # an id may be echoed (ids are not secret), a name never
            denied.append(_error_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, t.topic_id)
                          if t.name is None else
                          _error_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, n))
    return unknown_ids + found + denied


async def handle(ctx: RequestContext, header: RequestHeader, request: MetadataRequest,
                 version: int) -> MetadataResponse:
    with_ops = version >= 8 and request.include_topic_authorized_operations
    allow_create = version < 4 or request.allow_auto_topic_creation
    wanted = request.topics
    if wanted is None or (version == 0 and not wanted):
        every = list(ctx.topics.all())
        visible = authz.authorized(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.name for t in every))
        topics = [topic_metadata(ctx, t, with_ops) for t in every if t.name in visible]
    elif authz.enabled(ctx):
        topics = _lookup_authorized(ctx, wanted, allow_create, with_ops)
    else:
        topics = [_lookup(ctx, t, allow_create, with_ops) for t in wanted]
    cluster_ops = UNKNOWN_OPERATIONS
    if 8 <= version <= 10 and request.include_cluster_authorized_operations:
        cluster_ops = authz.operations(ctx, authz.CLUSTER, authz.CLUSTER_NAME) \
            if authz.allowed_on_cluster(ctx, authz.Op.DESCRIBE, log_if_denied=False) else 0
    cluster = ctx.cluster
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=node, host=host, port=port,
                                        rack=ctx.config.rack)
                 for node, host, port in broker_endpoints(ctx)],
        cluster_id=ctx.config.cluster_id,
        controller_id=ctx.config.node_id if cluster is None else cluster.controller_id(),
        topics=topics,
        cluster_authorized_operations=cluster_ops,
    )
