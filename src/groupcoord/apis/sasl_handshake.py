"""SaslHandshake (key 17, v0-1) after authentication, or on a listener without SASL.

Before authentication on a SASL listener the handshake never reaches the handlers (the
server's `SaslAuthenticator` answers it). Here, as Kafka's `KafkaApis.handleSaslHandshakeRequest`,
the only answer is ILLEGAL_SASL_STATE. (A re-authentication handshake on a connection with
a session lifetime is taken by the server before dispatch, as Kafka's `Processor` takes it.)
"""

from __future__ import annotations

from groupcoord.apis.context import RequestContext
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from groupcoord.wire.headers import RequestHeader

MIN_VERSION, MAX_VERSION = 0, 1


async def handle(ctx: RequestContext, header: RequestHeader, request: SaslHandshakeRequest,
                 version: int) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
