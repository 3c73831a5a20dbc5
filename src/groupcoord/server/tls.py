"""TLS for SSL and SASL_SSL listeners, with the standard library's `ssl` module.

The server context offers TLS 1.2 and 1.3 (Kafka's default `ssl.enabled.protocols`), presents
`--ssl-cert`/`--ssl-key`, and with `--ssl-ca` verifies client certificates: `none` asks for
none, `requested` asks and accepts a client without one, `required` refuses a client without
one (Kafka's `ssl.client.auth`). An SSL listener's principal is the client certificate's
subject mapped by `ssl.principal.mapping.rules`, or `User:ANONYMOUS` without a certificate
(Kafka's `DefaultKafkaPrincipalBuilder`); on SASL_SSL the SASL exchange decides.
"""

from __future__ import annotations

import asyncio
import ssl

from groupcoord.security.config import SecurityConfig
from groupcoord.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from groupcoord.security.ssl_principal import SslPrincipalMapper
from groupcoord.security.x500 import subject_rfc2253

_VERIFY_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                 "required": ssl.CERT_REQUIRED}


def server_context(config: SecurityConfig) -> ssl.SSLContext:
    """The listener's TLS context; OSError / ssl.SSLError for unreadable key material."""
    if not (config.ssl_cert and config.ssl_key):
        raise ValueError("TLS needs --ssl-cert and --ssl-key")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(config.ssl_cert, config.ssl_key)
    if config.ssl_ca:
        context.load_verify_locations(cafile=config.ssl_ca)
    context.verify_mode = _VERIFY_MODES[config.ssl_client_auth]
    return context


def peer_principal(transport: asyncio.BaseTransport,
                   mapper: SslPrincipalMapper) -> KafkaPrincipal:
    """The principal of a TLS peer; `NoMatchingRule` / ValueError refuse the connection."""
    ssl_object = transport.get_extra_info("ssl_object")
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    return KafkaPrincipal(USER_TYPE, mapper.name(subject_rfc2253(der)))
