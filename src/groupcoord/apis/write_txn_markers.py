"""WriteTxnMarkers (key 27, v1-v2, Kafka 4.4's range): a transaction coordinator on another
node asks this node, the partitions' leader, to append COMMIT/ABORT markers.

Mirrors `KafkaApis.handleWriteTxnMarkersRequest`: CLUSTER_ACTION on the cluster (brokers
only), else CLUSTER_AUTHORIZATION_FAILED on every partition; then per partition of each
marker, in the request's order:

- a topic or partition this node does not know: UNKNOWN_TOPIC_OR_PARTITION;
- a partition another node leads: NOT_LEADER_OR_FOLLOWER (the coordinator looks the leader
  up again and retries);
- a data partition: the control batch appended through the path the local coordinator uses
  (`TransactionRuntime.write_marker`): an older producer epoch is INVALID_PRODUCER_EPOCH, an
  older coordinator epoch TRANSACTION_COORDINATOR_FENCED, a log that failed
  KAFKA_STORAGE_ERROR;
- a `__consumer_offsets` partition: the group coordinator's `completeTransaction`, its
  COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and NOT_COORDINATOR answered
  NOT_LEADER_OR_FOLLOWER (`errors.marker_error`).

Kafka advertises it on the broker listener; a groupcoord node's listeners serve clients and
brokers alike, so every listener does.
"""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import marker_error
from groupcoord.apis.nodes import leads
from groupcoord.coordinator.transactions.state import TxnMarker
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 1, 2


def error_response(request: WriteTxnMarkersRequest, version: int,
                   code: int) -> WriteTxnMarkersResponse:
    """`WriteTxnMarkersRequest.getErrorResponse`: the error on every partition."""
    return WriteTxnMarkersResponse(markers=[
        WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
            WritableTxnMarkerTopicResult(name=t.name, partitions=[
                WritableTxnMarkerPartitionResult(partition_index=p, error_code=code)
                for p in t.partition_indexes])
            for t in m.topics])
        for m in request.markers])


async def _partition_error(ctx: RequestContext, marker: TxnMarker, topic_name: str,
                           partition: int) -> int:
    topic = ctx.topics.get(topic_name)
    if topic is None or not 0 <= partition < topic.num_partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not leads(ctx, topic_name, partition):
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    code = await ctx.transactions.write_marker((topic_name, partition), marker)
    return marker_error(code) if topic_name == OFFSETS_TOPIC else code


async def _marker_result(ctx: RequestContext, request: WritableTxnMarker,
                         version: int) -> WritableTxnMarkerResult:
    marker = TxnMarker(request.producer_id, request.producer_epoch, request.coordinator_epoch,
                       request.transaction_result,
                       request.transaction_version if version >= 2 else 0)
    topics = []
    for t in request.topics:
        partitions = [WritableTxnMarkerPartitionResult(
            partition_index=p, error_code=await _partition_error(ctx, marker, t.name, p))
            for p in t.partition_indexes]
        topics.append(WritableTxnMarkerTopicResult(name=t.name, partitions=partitions))
    return WritableTxnMarkerResult(producer_id=request.producer_id, topics=topics)


async def handle(ctx: RequestContext, header: RequestHeader, request: WriteTxnMarkersRequest,
                 version: int) -> WriteTxnMarkersResponse:
    authz.require_cluster(ctx, authz.Op.CLUSTER_ACTION)  # brokers only
    return WriteTxnMarkersResponse(markers=[await _marker_result(ctx, m, version)
                                            for m in request.markers])
