"""What every SASL connection of a broker shares: the enabled mechanisms and where their
credentials come from (PLAIN: the users file; SCRAM: the data dir's credential store;
OAUTHBEARER: the unsecured token itself), the handler table, the clocks and the way back to
the request handlers once a connection has authenticated."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from groupcoord.security.config import OAUTHBEARER, PLAIN
from groupcoord.security.sasl_oauthbearer import OAuthBearerUnsecuredSaslServer
from groupcoord.security.sasl_plain import PlainSaslServer
from groupcoord.security.sasl_scram import ScramSaslServer
from groupcoord.security.sasl_server import SaslServer
from groupcoord.security.scram import MECHANISMS as SCRAM_MECHANISMS

if TYPE_CHECKING:
    from groupcoord.security.scram_store import ScramCredentialStore
    from groupcoord.server.connection import KafkaConnection

Dispatch = Callable[["KafkaConnection", bytes, int, int], None]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class SaslServices:
    def __init__(self, enabled_mechanisms: tuple[str, ...], handlers: Mapping[int, Any],
                 dispatch: Dispatch, scram_store: ScramCredentialStore,
                 plain_users: Mapping[str, str], connections_max_reauth_ms: int,
                 max_request_size: int, failed_authentication_delay_ms: int = 100,
                 monotonic: Callable[[], float] = time.monotonic,
                 wall_ms: Callable[[], int] = wall_clock_ms) -> None:
        self.enabled_mechanisms = enabled_mechanisms
        self.handlers = handlers
        self.dispatch = dispatch
        self.scram_store = scram_store
        self.plain_users = plain_users
        self.connections_max_reauth_ms = connections_max_reauth_ms
        self.max_request_size = max_request_size
        self.failed_authentication_delay_s = failed_authentication_delay_ms / 1000.0
        self.monotonic = monotonic
        self.wall_ms = wall_ms

    def create_server(self, mechanism: str) -> SaslServer:
        if mechanism == PLAIN:
            return PlainSaslServer(self.plain_users)
        if mechanism == OAUTHBEARER:
            return OAuthBearerUnsecuredSaslServer(self.wall_ms)
        return ScramSaslServer(SCRAM_MECHANISMS[mechanism], self.scram_store.lookup)
