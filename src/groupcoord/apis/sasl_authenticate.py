"""SaslAuthenticate (key 36, v0-2) outside a SASL exchange.

During authentication the server's `SaslAuthenticator` takes these requests; one reaching
the handlers comes after a successful authentication (or on a listener without SASL) and is
answered as Kafka's `KafkaApis.handleSaslAuthenticateRequest` answers it.
"""

from __future__ import annotations

from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 2


async def handle(ctx: RequestContext, header: RequestHeader, request: SaslAuthenticateRequest,
                 version: int) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"", session_lifetime_ms=0)
