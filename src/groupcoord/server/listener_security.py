"""Per-listener security: the protocol, the advertised endpoint, TLS and SASL set-up of each
new connection (Kafka's `ChannelBuilder` per listener name).

- PLAINTEXT: nothing; the principal stays `User:ANONYMOUS`.
- SSL: the principal comes from the client certificate (`tls.peer_principal`); a subject no
  mapping rule matches refuses the connection.
- SASL_PLAINTEXT / SASL_SSL: the connection starts behind a `SaslAuthenticator`.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING

from groupcoord.security.config import SSL, uses_sasl
from groupcoord.security.settings import Settings
from groupcoord.server.config import Listener

if TYPE_CHECKING:
    from groupcoord.security.ssl_principal import SslPrincipalMapper
    from groupcoord.server.connection import KafkaConnection
    from groupcoord.server.sasl_services import SaslServices

log = logging.getLogger("groupcoord.server")


class ListenerSecurity(Settings):
    """How one listener secures its connections (a `Settings` record: built before the
    broker binds, where a dataclass costs its generated code and a NamedTuple its `exec`)."""

    name: str
    security_protocol: str
    advertised: Listener
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: SslPrincipalMapper | None = None
    sasl: SaslServices | None = None

    def on_connect(self, conn: KafkaConnection, transport: asyncio.BaseTransport) -> None:
        """Called once the transport is up (after the TLS handshake on TLS listeners)."""
        # TLS and SASL modules load with the first connection that needs them (start-up).
        if self.security_protocol == SSL and self.principal_mapper is not None:
            from groupcoord.server.tls import peer_principal

            try:
                conn.principal = peer_principal(transport, self.principal_mapper)
            except ValueError as exc:
                conn.protocol_error(f"no principal for the client certificate: {exc}")
                return
        if uses_sasl(self.security_protocol) and self.sasl is not None:
            from groupcoord.server.sasl_authenticator import (
                SASL_SERVER_MAX_RECEIVE_SIZE,
                SaslAuthenticator,
            )

            conn.gate = SaslAuthenticator(self.sasl)
            conn.max_frame = SASL_SERVER_MAX_RECEIVE_SIZE

