"""Builds each listener's `ListenerSecurity` from the broker config: its security protocol,
its advertised endpoint, one TLS context and one set of SASL services shared by all
listeners that need them."""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from groupcoord.security.config import OAUTHBEARER, PLAIN, uses_sasl, uses_tls
from groupcoord.server.listener_security import ListenerSecurity

if TYPE_CHECKING:
    from groupcoord.security.scram_store import ScramCredentialStore
    from groupcoord.security.ssl_principal import SslPrincipalMapper
    from groupcoord.server.config import BrokerConfig
    from groupcoord.server.sasl_services import Dispatch, SaslServices

log = logging.getLogger("groupcoord.server")


class ListenerSetup:
    def __init__(self, config: BrokerConfig, handlers: Mapping[int, Any], dispatch: Dispatch,
                 scram_store: Callable[[], ScramCredentialStore]) -> None:
        self._config = config
        self._handlers = handlers
        self._dispatch = dispatch
        # Loaded on first use: only SASL listeners need the credentials before start-up ends.
        self._scram_store = scram_store
        self._ssl: ssl.SSLContext | None = None
        self._mapper: SslPrincipalMapper | None = None
        self._sasl: SaslServices | None = None

    def listener(self, index: int, bound_port: int) -> ListenerSecurity:
        config = self._config
        listener = config.listeners[index]
        protocol = config.security_protocol(listener)
        return ListenerSecurity(
            name=listener.name, security_protocol=protocol,
            advertised=config.advertised_for(index, bound_port),
            ssl_context=self._tls() if uses_tls(protocol) else None,
            principal_mapper=self._principal_mapper() if uses_tls(protocol) else None,
            sasl=self._sasl_services() if uses_sasl(protocol) else None)

    # TLS and SASL modules load only for a listener that uses them (start-up time).
    def _tls(self) -> ssl.SSLContext:
        from groupcoord.server.tls import server_context

        if self._ssl is None:
            self._ssl = server_context(self._config.security)
        return self._ssl

    def _principal_mapper(self) -> SslPrincipalMapper:
        from groupcoord.security.ssl_principal import SslPrincipalMapper

        if self._mapper is None:
            self._mapper = SslPrincipalMapper(self._config.security.ssl_principal_mapping_rules)
        return self._mapper

    def _sasl_services(self) -> SaslServices:
        from groupcoord.security.sasl_plain import load_plain_users
        from groupcoord.server.sasl_services import SaslServices

        if self._sasl is None:
            security = self._config.security
            mechanisms = security.enabled_mechanisms
            users = (load_plain_users(security.sasl_plain_users)
                     if PLAIN in mechanisms and security.sasl_plain_users else {})
            if OAUTHBEARER in mechanisms:
                log.warning("SASL OAUTHBEARER is enabled with unsecured (unsigned) tokens: any "
                            "client can claim any principal. For tests and development only.")
            self._sasl = SaslServices(
                mechanisms, self._handlers, self._dispatch, self._scram_store(), users,
                security.connections_max_reauth_ms, self._config.max_request_size,
                security.connection_failed_authentication_delay_ms)
        return self._sasl
