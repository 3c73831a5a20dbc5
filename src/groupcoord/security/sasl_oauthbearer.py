"""SASL/OAUTHBEARER with unsecured JWS tokens (RFC 7628), as Kafka ships it for testing:
`OAuthBearerSaslServer` with `OAuthBearerUnsecuredValidatorCallbackHandler`.

The client's initial response is `n,[a=authzid],^Aauth=Bearer <token>^A[key=value^A]...^A`.
The token is an unsecured JWS (`header.claims.`, empty signature): the header's `alg` must
be `none`, the `sub` claim (a non-empty string) is the principal, `exp` (seconds, required)
must lie in the future, `iat` (optional) not in the future, and `exp` after `iat`. These
tokens carry no signature: anyone can mint one, which is why Kafka documents the handler
for non-production use only.

A token that fails validation is answered as RFC 7628 says, with the challenge
`{"status":"invalid_token"}`; the client then sends a lone `^A` and the exchange fails with
that JSON as the message (Kafka's behaviour). Extensions are accepted unvalidated, as the
unsecured handler accepts them. The token's `exp` becomes the credential expiry, which
bounds the session for re-authentication (KIP-368).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any

from groupcoord.security.config import OAUTHBEARER
from groupcoord.security.sasl_errors import SaslAuthenticationError, SaslError

_SEP = "\x01"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*"
INITIAL_RESPONSE = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01")
AUTH_VALUE = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")
PRINCIPAL_CLAIM = "sub"
INVALID_TOKEN = json.dumps({"status": "invalid_token"}, separators=(",", ":"))


class InvalidToken(ValueError):
    """The token is not an acceptable unsecured JWS (the reason is logged, not sent)."""


def _b64url_json(part: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        value = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidToken(f"not Base64URL-encoded JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise InvalidToken("JOSE header and claims must be JSON objects")
    return value


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToken(f"claim {name} is not a number")
    return float(value)


def validate_unsecured_jws(token: str, now_ms: int) -> tuple[str, int]:
    """(principal name, expiry in ms) of a valid token, else InvalidToken."""
    parts = token.split(".")
    if len(parts) != 3 or parts[2] != "" or not parts[0] or not parts[1]:
        raise InvalidToken("an unsecured JWS is header.claims. with an empty signature")
    header, claims = _b64url_json(parts[0]), _b64url_json(parts[1])
    if header.get("alg") != "none":
        raise InvalidToken("unsecured JWS must have alg none")
    principal = claims.get(PRINCIPAL_CLAIM)
    if not isinstance(principal, str) or not principal:
        raise InvalidToken(f"no principal name in claim {PRINCIPAL_CLAIM}")
    exp = _number(claims, "exp")
    if exp is None:
        raise InvalidToken("no expiration time (exp) in the token")
    expiry_ms = round(exp * 1000)
    if now_ms >= expiry_ms:
        raise InvalidToken(f"the token expired at {expiry_ms} (now {now_ms})")
    iat = _number(claims, "iat")
    if iat is not None and round(iat * 1000) > now_ms:
        raise InvalidToken("the token was issued in the future")
    if iat is not None and expiry_ms <= round(iat * 1000):
        raise InvalidToken("the token expires before it was issued")
    return principal, expiry_ms


class OAuthBearerUnsecuredSaslServer:
    mechanism = OAUTHBEARER

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._error: str | None = None
        self.complete = False
        self.authorization_id = ""
        self.credential_expiry_ms: int | None = None

    def evaluate(self, response: bytes) -> bytes:
        if response == _SEP.encode() and self._error is not None:
            raise SaslAuthenticationError(self._error)
        self._error = None
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SaslError("Invalid OAUTHBEARER client first message: not UTF-8") from exc
        match = INITIAL_RESPONSE.fullmatch(text)
        if match is None:
            raise SaslError("Invalid OAUTHBEARER client first message")
        pairs = dict(item.partition("=")[::2] for item in match["kvpairs"].split(_SEP) if item)
        auth = AUTH_VALUE.fullmatch(pairs.get("auth", ""))
        if auth is None or auth["scheme"].lower() != "bearer":
            raise SaslError("Invalid OAUTHBEARER client first message: no Bearer token")
        try:
            principal, expiry_ms = validate_unsecured_jws(auth["token"], self._now_ms())
        except InvalidToken:
            self._error = INVALID_TOKEN
            return INVALID_TOKEN.encode()
        authzid = match["authzid"]
        if authzid and authzid != principal:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authzid}) "
                f"that is different from the token's principal name ({principal})")
        self.authorization_id = principal
        self.credential_expiry_ms = expiry_ms
        self.complete = True
        return b""
