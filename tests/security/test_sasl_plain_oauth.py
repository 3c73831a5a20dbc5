"""PLAIN and OAUTHBEARER (unsecured JWS) servers: Kafka's token splitting and messages, the
users file, and the token checks of `OAuthBearerUnsecuredValidatorCallbackHandler`."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.sasl_wire import oauth_initial_response, unsecured_jws

from groupcoord.security.sasl_errors import SaslAuthenticationError, SaslError
from groupcoord.security.sasl_oauthbearer import (
    INVALID_TOKEN,
    OAuthBearerUnsecuredSaslServer,
    validate_unsecured_jws,
)
from groupcoord.security.sasl_plain import PlainSaslServer, load_plain_users

NOW_MS = 1_800_000_000_000


def test_plain_accepts_the_right_password_only() -> None:
    users = {"alice": "s3cret"}
    ok = PlainSaslServer(users)
    assert ok.evaluate(b"\0alice\0s3cret") == b"" and ok.complete
    assert ok.authorization_id == "alice"
    assert PlainSaslServer(users).evaluate(b"alice\0alice\0s3cret") == b""
    for token in (b"\0alice\0wrong", b"\0bob\0s3cret", b"\0alice\0s3cre"):
        with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
            PlainSaslServer(users).evaluate(token)
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        PlainSaslServer(users).evaluate(b"admin\0alice\0s3cret")


@pytest.mark.parametrize("token,reason", [
    (b"no separators", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\0alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0alice\0pw\0extra", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\0\0pw", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"\0al\xffice\0pw", "Invalid username or password"),  # replacement character
])
def test_plain_refusals_carry_kafkas_messages(token: bytes, reason: str) -> None:
    with pytest.raises(SaslAuthenticationError) as raised:
        PlainSaslServer({"alice": "pw"}).evaluate(token)
    assert reason in str(raised.value)


def test_users_file(tmp_path: Path) -> None:
    path = tmp_path / "users"
    path.write_text("# comment\n\nalice=pw=with=equals\n bob = x\n")
    assert load_plain_users(str(path)) == {"alice": "pw=with=equals", "bob": " x"}
    path.write_text("alice\n")
    with pytest.raises(ValueError, match="users:1"):
        load_plain_users(str(path))


def test_valid_unsecured_token() -> None:
    token = unsecured_jws({"sub": "svc", "iat": NOW_MS / 1000 - 5, "exp": NOW_MS / 1000 + 60})
    assert validate_unsecured_jws(token, NOW_MS) == ("svc", NOW_MS + 60_000)
    server = OAuthBearerUnsecuredSaslServer(lambda: NOW_MS)
    assert server.evaluate(oauth_initial_response(token)) == b""
    assert (server.authorization_id, server.credential_expiry_ms) == ("svc", NOW_MS + 60_000)


@pytest.mark.parametrize("claims,alg", [
    ({"sub": "svc", "exp": NOW_MS / 1000}, "none"),            # expired (now >= exp)
    ({"sub": "svc"}, "none"),                                   # no exp
    ({"exp": NOW_MS / 1000 + 60}, "none"),                      # no sub
    ({"sub": "", "exp": NOW_MS / 1000 + 60}, "none"),           # empty sub
    ({"sub": "svc", "exp": "tomorrow"}, "none"),                # exp not a number
    ({"sub": "svc", "exp": NOW_MS / 1000 + 60}, "HS256"),       # signed alg
    ({"sub": "svc", "exp": NOW_MS / 1000 + 60, "iat": NOW_MS / 1000 + 30}, "none"),  # future iat
])
def test_invalid_tokens_get_the_rfc7628_challenge_then_fail(claims: dict[str, object],
                                                            alg: str) -> None:
    server = OAuthBearerUnsecuredSaslServer(lambda: NOW_MS)
    assert server.evaluate(oauth_initial_response(unsecured_jws(claims, alg))) == \
        INVALID_TOKEN.encode()
    with pytest.raises(SaslAuthenticationError, match="invalid_token"):
        server.evaluate(b"\x01")


@pytest.mark.parametrize("message", [b"", b"n,,auth=Bearer x", b"n,,\x01auth=Basic abc\x01\x01",
                                     b"n,,\x01\x01", b"n,,\x01auth=Bearer a.b.c d\x01\x01"])
def test_malformed_initial_responses(message: bytes) -> None:
    with pytest.raises(SaslError):
        OAuthBearerUnsecuredSaslServer(lambda: NOW_MS).evaluate(message)


def test_signed_looking_tokens_are_not_unsecured() -> None:
    token = unsecured_jws({"sub": "svc", "exp": NOW_MS / 1000 + 60}) + "signature"
    server = OAuthBearerUnsecuredSaslServer(lambda: NOW_MS)
    assert server.evaluate(oauth_initial_response(token)) == INVALID_TOKEN.encode()
    with pytest.raises(SaslAuthenticationError):
        OAuthBearerUnsecuredSaslServer(lambda: NOW_MS).evaluate(
            b"n,a=other,\x01auth=Bearer "
            + unsecured_jws({"sub": "svc", "exp": NOW_MS / 1000 + 60}).encode() + b"\x01\x01")
