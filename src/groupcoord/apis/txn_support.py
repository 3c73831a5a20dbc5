"""What the transaction coordinator's APIs (AddOffsetsToTxn, AddPartitionsToTxn, EndTxn,
InitProducerId) check and translate alike, as `KafkaApis` does around
`TransactionCoordinator`."""

from __future__ import annotations

from groupcoord.apis import authorization as authz
from groupcoord.apis.context import RequestContext
from groupcoord.apis.nodes import TRANSACTION_KEY, coordinates
from groupcoord.wire.errors import ErrorCode


def coordinator_error(ctx: RequestContext, transactional_id: str,
                      group_id: str | None = None) -> int:
    """The checks before the coordinator sees a request, in Kafka's order: WRITE on the
    transactional id, READ on the group the request names (AddOffsetsToTxn), then whether
    this node coordinates the id. 0 when all pass."""
    if not authz.allowed(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, transactional_id):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if group_id is not None and not authz.allowed(ctx, authz.Op.READ, authz.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if not coordinates(ctx, TRANSACTION_KEY, transactional_id):
        return ErrorCode.NOT_COORDINATOR
    return 0


def fenced_as_known(code: int, version: int, first_fenced_version: int) -> int:
    """The coordinator's answer for a client of `version`: one older than the API's
    `first_fenced_version` knows PRODUCER_FENCED as INVALID_PRODUCER_EPOCH."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_fenced_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code
