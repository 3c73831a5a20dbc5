"""SASL authentication of one connection, as Kafka's `SaslServerAuthenticator`.

A connection on a SASL_PLAINTEXT or SASL_SSL listener starts with its frames routed here
instead of to the request handlers (`KafkaConnection.gate`). Kafka's state machine:

- First, only ApiVersions (once, as the first request) and SaslHandshake are allowed. Any
  other request, an undecodable frame, or a frame larger than `sasl.server.max.receive.size`
  (512 KiB) closes the connection without an answer.
- SaslHandshake with a mechanism not enabled: UNSUPPORTED_SASL_MECHANISM with the enabled
  list, then close. v0 of the handshake means raw size-prefixed SASL tokens follow; v1 means
  SaslAuthenticate requests.
- SaslAuthenticate carries the tokens. A request of another API in this state is answered
  with ILLEGAL_SASL_STATE and the connection closes. A failed exchange answers
  SASL_AUTHENTICATION_FAILED (58) with the mechanism's safe message or Kafka's generic one,
  then closes after `connection.failed.authentication.delay.ms` (100 ms), so the client reads
  the answer before the close; with raw tokens a failure just closes.
- On success the connection's principal becomes `User:<authorization id>` and its frames go
  to the request handlers again; with a session lifetime (KIP-368: `connections.max.reauth.ms`,
  or the credential's own expiry) a `SessionGate` stays in front of them: a SaslHandshake
  starts a re-authentication (at most one per second), which must keep the mechanism and the
  principal; any other request after the session expired closes the connection, as Kafka's
  `Processor` does ("Disconnecting expired channel").

Responses take their place in the connection's ordered output like any other response.
"""

from __future__ import annotations

import enum
import logging
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from groupcoord.apis.api_versions import respond as api_versions_response
from groupcoord.apis.api_versions import unsupported_version_response
from groupcoord.security.principal import USER_TYPE, KafkaPrincipal
from groupcoord.security.sasl_errors import (
    SaslAuthenticationError,
    SaslError,
    generic_failure_message,
)
from groupcoord.server.dispatch import encode_response
from groupcoord.server.framing import API_VERSIONS_KEY
from groupcoord.wire.api_keys import ApiKey
from groupcoord.wire.errors import DecodeError, ErrorCode
from groupcoord.wire.generated.sasl_authenticate import SaslAuthenticateResponse
from groupcoord.wire.generated.sasl_handshake import SaslHandshakeResponse
from groupcoord.wire.headers import peek_request_header, read_client_id, response_header_flexible

if TYPE_CHECKING:
    from groupcoord.server.connection import KafkaConnection
    from groupcoord.server.sasl_services import SaslServices

log = logging.getLogger("groupcoord.server")

# Kafka's `sasl.server.max.receive.size` default: frames before authentication are small.
SASL_SERVER_MAX_RECEIVE_SIZE = 524288
# KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS
MIN_REAUTH_INTERVAL_S = 1.0
_SIZE = struct.Struct(">i")
_API_KEY = struct.Struct(">h")


class SaslState(enum.Enum):
    INITIAL_REQUEST = "INITIAL_REQUEST"
    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    REAUTH_PROCESS_HANDSHAKE = "REAUTH_PROCESS_HANDSHAKE"
    REAUTH_BAD_MECHANISM = "REAUTH_BAD_MECHANISM"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


_KAFKA_REQUEST_STATES = frozenset({
    SaslState.INITIAL_REQUEST, SaslState.HANDSHAKE_OR_VERSIONS_REQUEST,
    SaslState.HANDSHAKE_REQUEST, SaslState.REAUTH_PROCESS_HANDSHAKE})


class _Failed(Exception):
    """Authentication failed: close after the responses owed (logged at INFO)."""


class _Invalid(Exception):
    """Not a request this state accepts: close (logged as a protocol error)."""


@dataclass(frozen=True)
class Reauthentication:
    """What a re-authentication must keep (Kafka's `ReauthInfo`)."""

    mechanism: str
    principal: KafkaPrincipal
    client_supports_reauth: bool
    started: float  # monotonic seconds


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)


class SaslAuthenticator:
    """The frames of one connection until its (re-)authentication completes or fails."""

    def __init__(self, services: SaslServices,
                 reauth: Reauthentication | None = None) -> None:
        self._services = services
        self._reauth = reauth
        self.state = (SaslState.REAUTH_PROCESS_HANDSHAKE if reauth is not None
                      else SaslState.INITIAL_REQUEST)
        self._headers = False  # SaslAuthenticate requests (handshake v1) vs raw tokens (v0)
        self._server: Any = None
        self._mechanism = ""
        self._bad_mechanism = ""
        self._client_supports_reauth = reauth.client_supports_reauth if reauth else False

    # -- entry point -----------------------------------------------------------------------

    def frame(self, conn: KafkaConnection, buf: bytes, start: int, end: int) -> None:
        try:
            if self.state in _KAFKA_REQUEST_STATES:
                self._kafka_request(conn, buf, start, end)
            elif self.state is SaslState.REAUTH_BAD_MECHANISM:
                raise _Failed(self._bad_mechanism)
            elif self.state is SaslState.AUTHENTICATE:
                self._token(conn, buf, start, end)
            else:
                raise _Invalid(f"frame in SASL state {self.state.value}")
        except _Failed as exc:
            self.state = SaslState.FAILED
            log.info("Failed %s with %s (%s)", self._phase, conn.client_host.lstrip("/"), exc)
            conn.close_after_pending(delay_s=self._services.failed_authentication_delay_s)
        except (_Invalid, DecodeError) as exc:
            self.state = SaslState.FAILED
            conn.protocol_error(f"during SASL {self._phase}: {exc}")
        except Exception as exc:  # a bug here must cost this connection only, loudly
            self.state = SaslState.FAILED
            log.exception("SASL %s with %s failed unexpectedly", self._phase, conn.peer)
            conn.protocol_error(f"during SASL {self._phase}: {exc!r}")

    @property
    def _phase(self) -> str:
        return "re-authentication" if self._reauth is not None else "authentication"

    # -- before the mechanism is chosen ----------------------------------------------------

    def _kafka_request(self, conn: KafkaConnection, buf: bytes, start: int, end: int) -> None:
        api_key, version, correlation_id = peek_request_header(buf, start, end)
        if api_key not in (API_VERSIONS_KEY, ApiKey.SASL_HANDSHAKE):
            raise _Invalid(f"Unexpected Kafka request of type {_api_name(api_key)} during "
                           f"SASL handshake.")
        if api_key == API_VERSIONS_KEY:
            self._api_versions(conn, buf, start, end, version, correlation_id)
            return
        request = self._decode(buf, start, end, api_key, version)
        if self.state is SaslState.INITIAL_REQUEST:
            self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        self._handshake(conn, request.mechanism, version, correlation_id)

    def _api_versions(self, conn: KafkaConnection, buf: bytes, start: int, end: int,
                      version: int, correlation_id: int) -> None:
        if self.state not in (SaslState.INITIAL_REQUEST,
                              SaslState.HANDSHAKE_OR_VERSIONS_REQUEST):
            raise _Invalid(f"Unexpected ApiVersions request received during SASL "
                           f"authentication state {self.state.value}")
        handlers = self._services.handlers
        spec = handlers[API_VERSIONS_KEY]
        if not spec.min_version <= version <= spec.max_version:
            self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
            self._send(conn, unsupported_version_response(handlers), 0, correlation_id, False)
            return
        request = self._decode(buf, start, end, API_VERSIONS_KEY, version)
        self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        response = api_versions_response(handlers, request, version)
        self._send(conn, response, version, correlation_id, False)
        if response.error_code == 0:
            self.state = SaslState.HANDSHAKE_REQUEST

    def _handshake(self, conn: KafkaConnection, mechanism: str, version: int,
                   correlation_id: int) -> None:
        if version >= 1:
            self._headers = True
        enabled = list(self._services.enabled_mechanisms)
        if mechanism not in enabled:
            self._send(conn, SaslHandshakeResponse(
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled),
                version, correlation_id, False)
            raise _Failed(f"Unsupported SASL mechanism {mechanism}")
        self._send(conn, SaslHandshakeResponse(error_code=0, mechanisms=enabled), version,
                   correlation_id, False)
        reauth = self._reauth
        if reauth is not None and mechanism != reauth.mechanism:
            self._bad_mechanism = (f"SASL mechanism '{mechanism}' requested by client is not "
                                   f"supported for re-authentication of mechanism "
                                   f"'{reauth.mechanism}'")
            self.state = SaslState.REAUTH_BAD_MECHANISM
            return
        self._mechanism = mechanism
        self._server = self._services.create_server(mechanism)
        self.state = SaslState.AUTHENTICATE

    # -- the mechanism's exchange ----------------------------------------------------------

    def _token(self, conn: KafkaConnection, buf: bytes, start: int, end: int) -> None:
        if not self._headers:
            self._raw_token(conn, bytes(buf[start:end]))
            return
        api_key, version, correlation_id = peek_request_header(buf, start, end)
        request = self._decode(buf, start, end, api_key, version)
        if api_key != ApiKey.SASL_AUTHENTICATE:
            self._send_illegal_state(conn, api_key, request, version, correlation_id)
            raise _Failed(f"Unexpected Kafka request of type {_api_name(api_key)} during "
                          f"SASL authentication.")
        if version > 0:
            self._client_supports_reauth = True
        flexible = self._services.handlers[ApiKey.SASL_AUTHENTICATE].is_flexible(version)
        try:
            challenge = self._server.evaluate(bytes(request.auth_bytes))
            principal = self._principal() if self._server.complete else None
        except SaslAuthenticationError as exc:
            self._send_failure(conn, str(exc), version, correlation_id, flexible)
            raise _Failed(str(exc)) from exc
        except SaslError as exc:
            message = generic_failure_message(self._mechanism, self._reauth is not None)
            self._send_failure(conn, message, version, correlation_id, flexible)
            raise _Failed(f"{message}: {exc}") from exc
        lifetime_ms = self._complete(conn, principal) if principal is not None else 0
        # Kafka leaves the nullable message at its default, "", on success.
        self._send(conn, SaslAuthenticateResponse(
            error_code=0, error_message="", auth_bytes=challenge,
            session_lifetime_ms=lifetime_ms), version, correlation_id, flexible)

    def _raw_token(self, conn: KafkaConnection, token: bytes) -> None:
        """Handshake v0: size-prefixed tokens both ways; a failure closes without a word."""
        try:
            challenge = self._server.evaluate(token)
            principal = self._principal() if self._server.complete else None
        except (SaslAuthenticationError, SaslError) as exc:
            raise _Failed(str(exc)) from exc
        if principal is not None:
            self._complete(conn, principal)
        conn.complete(conn.new_slot(), [_SIZE.pack(len(challenge)) + challenge])

    def _principal(self) -> KafkaPrincipal:
        principal = KafkaPrincipal(USER_TYPE, self._server.authorization_id)
        reauth = self._reauth
        if reauth is not None and principal != reauth.principal:
            old, new = reauth.principal, principal
            raise SaslAuthenticationError(
                f"Cannot change principals during re-authentication from "
                f"{old.principal_type}.{old.name}: {new.principal_type}.{new.name}")
        return principal

    def _complete(self, conn: KafkaConnection, principal: KafkaPrincipal) -> int:
        """Authenticated: set the principal, compute the session lifetime (Kafka's
        `calcCompletionTimesAndReturnSessionLifetimeMs`) and hand the frames back."""
        services = self._services
        self.state = SaslState.COMPLETE
        credential_expiry = self._server.credential_expiry_ms
        max_reauth = services.connections_max_reauth_ms
        lifetime_ms = 0
        if credential_expiry is not None or max_reauth > 0:
            remaining = (credential_expiry - services.wall_ms()
                         if credential_expiry is not None else max_reauth)
            if credential_expiry is not None and max_reauth > 0:
                remaining = min(remaining, max_reauth)
            lifetime_ms = max(0, remaining)
            expires_at = services.monotonic() + lifetime_ms / 1000.0
            started = self._reauth.started if self._reauth is not None else None
            conn.gate = SessionGate(services, self._mechanism, principal, expires_at,
                                    self._client_supports_reauth, started)
        else:
            conn.gate = None
        conn.principal = principal
        conn.max_frame = services.max_request_size
        # Re-authentications are rare (one per session lifetime) and worth seeing.
        log.log(logging.INFO if self._reauth is not None else logging.DEBUG,
                "%s of %s as %s with %s complete; session lifetime %d ms", self._phase,
                conn.peer, principal, self._mechanism, lifetime_ms)
        return lifetime_ms

    # -- decoding and answering ------------------------------------------------------------

    def _decode(self, buf: bytes, start: int, end: int, api_key: int, version: int) -> Any:
        spec = self._services.handlers.get(api_key)
        if spec is None or not spec.min_version <= version <= spec.max_version:
            raise _Invalid(f"unsupported version {version} of api key {api_key}")
        try:
            _, pos = read_client_id(buf, start, end, spec.is_flexible(version))
            request, stop = spec.request_cls.decode(buf, pos, version)
        except Exception as exc:  # any decode failure is the client's fault
            raise _Invalid(f"cannot decode api key {api_key} v{version}: {exc}") from exc
        if stop > end:
            raise _Invalid(f"api key {api_key} v{version} request runs past its frame")
        return request

    def _send(self, conn: KafkaConnection, response: Any, version: int, correlation_id: int,
              flexible_header: bool) -> None:
        conn.complete(conn.new_slot(),
                      encode_response(response, version, correlation_id, flexible_header))

    def _send_failure(self, conn: KafkaConnection, message: str, version: int,
                      correlation_id: int, flexible: bool) -> None:
        self._send(conn, SaslAuthenticateResponse(
            error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message,
            auth_bytes=b"", session_lifetime_ms=0), version, correlation_id, flexible)

    def _send_illegal_state(self, conn: KafkaConnection, api_key: int, request: Any,
                            version: int, correlation_id: int) -> None:
        """Kafka answers the stray request with its own error response (ILLEGAL_SASL_STATE)
        when the API has one."""
        spec = self._services.handlers[api_key]
        code = ErrorCode.ILLEGAL_SASL_STATE
        if spec.error_response is not None:
            response = spec.error_response(request, version, code)
        elif "error_code" in spec.response_cls._FIELDS:
            response = spec.response_cls()
            response.error_code = code
        else:
            return
        flexible = response_header_flexible(api_key, spec.is_flexible(version))
        self._send(conn, response, version, correlation_id, flexible)


class SessionGate:
    """In front of an authenticated connection whose session expires (KIP-368)."""

    def __init__(self, services: SaslServices, mechanism: str, principal: KafkaPrincipal,
                 expires_at: float, client_supports_reauth: bool,
                 last_reauth_start: float | None) -> None:
        self._services = services
        self.mechanism = mechanism
        self.principal = principal
        self.expires_at = expires_at
        self._client_supports_reauth = client_supports_reauth
        self._last_reauth_start = last_reauth_start

    def frame(self, conn: KafkaConnection, buf: bytes, start: int, end: int) -> None:
        services = self._services
        now = services.monotonic()
        if (end - start >= 2 and _API_KEY.unpack_from(buf, start)[0] == ApiKey.SASL_HANDSHAKE
                and (self._last_reauth_start is None
                     or now - self._last_reauth_start >= MIN_REAUTH_INTERVAL_S)):
            authenticator = SaslAuthenticator(services, Reauthentication(
                self.mechanism, self.principal, self._client_supports_reauth, now))
            conn.gate = authenticator
            conn.max_frame = SASL_SERVER_MAX_RECEIVE_SIZE
            authenticator.frame(conn, buf, start, end)
            return
        if now > self.expires_at:
            log.info("Disconnecting expired channel from %s (%s)", conn.peer, self.principal)
            conn.close()
            return
        services.dispatch(conn, buf, start, end)
