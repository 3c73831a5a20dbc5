"""Security settings of a broker: listener security protocols, TLS and SASL.

Mirrors the subset of Kafka's `BrokerSecurityConfigs` / `SslConfigs` / `SaslConfigs` a
single-node broker needs, with Kafka's names in snake_case and Kafka's defaults where Kafka
has a usable one:
- `listener.security.protocol.map` defaults to the four protocols mapped to themselves, so a
  listener named after a protocol needs no map entry;
- `ssl.principal.mapping.rules` defaults to `DEFAULT` (the certificate subject's full
  RFC 2253 distinguished name);
- `connections.max.reauth.ms` 0 means no re-authentication (no session expiry);
- `sasl.enabled.mechanisms`: Kafka's default is GSSAPI, which is not served here; the default
  is the SCRAM mechanisms (credentials in the data dir) plus PLAIN when a users file is given.
"""

from __future__ import annotations

from groupcoord.security.settings import Settings

PLAINTEXT = "PLAINTEXT"
SSL = "SSL"
SASL_PLAINTEXT = "SASL_PLAINTEXT"
SASL_SSL = "SASL_SSL"
SECURITY_PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
OAUTHBEARER = "OAUTHBEARER"
SUPPORTED_MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)

CLIENT_AUTH_MODES = ("none", "requested", "required")
DEFAULT_PRINCIPAL_MAPPING_RULES = "DEFAULT"
# asyncio's own default is 60 s; a client that has not finished TLS in 10 s is not coming.
DEFAULT_SSL_HANDSHAKE_TIMEOUT_MS = 10_000


def uses_tls(protocol: str) -> bool:
    return protocol in (SSL, SASL_SSL)


def uses_sasl(protocol: str) -> bool:
    return protocol in (SASL_PLAINTEXT, SASL_SSL)


def parse_protocol_map(text: str) -> dict[str, str]:
    """`NAME:PROTOCOL,...` -> {NAME: PROTOCOL}, on top of the default identity map."""
    mapping = {protocol: protocol for protocol in SECURITY_PROTOCOLS}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name or protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"listener security protocol map entry must be NAME:PROTOCOL with "
                             f"PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}, got {item!r}")
        mapping[name] = protocol
    return mapping


def parse_mechanisms(text: str) -> tuple[str, ...]:
    """`PLAIN,SCRAM-SHA-256` -> ("PLAIN", "SCRAM-SHA-256"), each one served here."""
    names = tuple(dict.fromkeys(part.strip().upper() for part in text.split(",") if part.strip()))
    unknown = [name for name in names if name not in SUPPORTED_MECHANISMS]
    if unknown:
        raise ValueError(f"unsupported SASL mechanism(s) {', '.join(unknown)}; served: "
                         f"{', '.join(SUPPORTED_MECHANISMS)}")
    return names


class SecurityConfig(Settings):
    """TLS and SASL settings shared by every listener that uses them."""

    ssl_cert: str | None = None
    ssl_key: str | None = None
    ssl_ca: str | None = None
    ssl_client_auth: str = "none"
    ssl_principal_mapping_rules: str = DEFAULT_PRINCIPAL_MAPPING_RULES
    ssl_handshake_timeout_ms: int = DEFAULT_SSL_HANDSHAKE_TIMEOUT_MS
    # None = the default (SCRAM, plus PLAIN with a users file).
    sasl_enabled_mechanisms: tuple[str, ...] | None = None
    sasl_plain_users: str | None = None
    connections_max_reauth_ms: int = 0
    # Kafka's `connection.failed.authentication.delay.ms`.
    connection_failed_authentication_delay_ms: int = 100

    def __post_init__(self) -> None:
        if self.ssl_client_auth not in CLIENT_AUTH_MODES:
            raise ValueError(f"ssl client auth must be one of {CLIENT_AUTH_MODES}, "
                             f"got {self.ssl_client_auth!r}")
        if self.ssl_client_auth != "none" and not self.ssl_ca:
            raise ValueError("client certificate authentication needs --ssl-ca")
        if self.ssl_handshake_timeout_ms <= 0:
            raise ValueError("ssl handshake timeout must be positive")
        if self.connections_max_reauth_ms < 0:
            raise ValueError("connections max reauth ms must be >= 0")
        if self.connection_failed_authentication_delay_ms < 0:
            raise ValueError("connection failed authentication delay ms must be >= 0")
        if self.sasl_enabled_mechanisms is not None:
            parse_mechanisms(",".join(self.sasl_enabled_mechanisms))
            if PLAIN in self.sasl_enabled_mechanisms and not self.sasl_plain_users:
                raise ValueError("SASL mechanism PLAIN needs --sasl-plain-users FILE")

    @property
    def enabled_mechanisms(self) -> tuple[str, ...]:
        if self.sasl_enabled_mechanisms is not None:
            return self.sasl_enabled_mechanisms
        scram = (SCRAM_SHA_256, SCRAM_SHA_512)
        return (PLAIN, *scram) if self.sasl_plain_users else scram

    def check_listener(self, protocol: str) -> None:
        """A listener of `protocol` can be served with these settings, else ValueError."""
        if uses_tls(protocol) and not (self.ssl_cert and self.ssl_key):
            raise ValueError(f"a {protocol} listener needs --ssl-cert and --ssl-key")
        if uses_sasl(protocol) and not self.enabled_mechanisms:
            raise ValueError(f"a {protocol} listener needs at least one SASL mechanism")
