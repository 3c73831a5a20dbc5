"""SCRAM against the RFC test vectors: RFC 7677's SCRAM-SHA-256 exchange and RFC 5802's
SHA-1 example (the same arithmetic with another hash), driven through the broker's SCRAM
server with the RFC's server nonce, so every byte it sends is checked."""

from __future__ import annotations

import base64

import pytest

from groupcoord.security.sasl_errors import SaslAuthenticationError, SaslError
from groupcoord.security.sasl_scram import (
    ScramSaslServer,
    saslname_from_username,
    username_from_saslname,
)
from groupcoord.security.scram import (
    SHA_256,
    ScramMechanism,
    client_proof,
    credential_from_password,
    salted_password,
)

SHA_1 = ScramMechanism("SCRAM-SHA-1", "sha1", 0, 4096)

# (mechanism, salt, client first, server nonce part, server first, client final, server final)
VECTORS = {
    "rfc7677-sha256": (
        SHA_256, "W22ZaJ0SNY7soEsUEjb6gQ==", "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
        "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        ("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="),
        "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
    "rfc5802-sha1": (
        SHA_1, "QSXCR+Q6sek8bf92", "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
        "3rfcNHYJY1ZVvWVs7j",
        "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
        "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
        "v=rmF9pqV8S7suAoZWja4dJRkFsKQ="),
}


def server_for(mechanism: ScramMechanism, salt_b64: str, nonce: str,
               password: str = "pencil") -> ScramSaslServer:
    credential = credential_from_password(mechanism, password, 4096, base64.b64decode(salt_b64))

    def lookup(user: str, name: str) -> object:
        return credential if (user, name) == ("user", mechanism.name) else None

    return ScramSaslServer(mechanism, lookup, lambda: nonce)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_rfc_exchange_byte_for_byte(name: str) -> None:
    mech, salt, client_first, nonce, server_first, client_final, server_final = VECTORS[name]
    server = server_for(mech, salt, nonce)
    assert server.evaluate(client_first.encode()).decode() == server_first
    assert not server.complete
    assert server.evaluate(client_final.encode()).decode() == server_final
    assert server.complete and server.authorization_id == "user"


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_client_proof_matches_the_rfc(name: str) -> None:
    mech, salt, client_first, _, server_first, client_final, _ = VECTORS[name]
    without_proof, _, proof = client_final.rpartition(",p=")
    auth_message = f"{client_first[3:]},{server_first},{without_proof}".encode()
    salted = salted_password(mech.hash_name, b"pencil", base64.b64decode(salt), 4096)
    assert base64.b64encode(client_proof(mech.hash_name, salted, auth_message)).decode() == proof


def test_wrong_password_and_wrong_nonce_fail_generically() -> None:
    mech, salt, client_first, nonce, _, client_final, _ = VECTORS["rfc7677-sha256"]
    wrong = server_for(mech, salt, nonce, password="not-pencil")
    wrong.evaluate(client_first.encode())
    with pytest.raises(SaslError, match="Invalid client credentials"):
        wrong.evaluate(client_final.encode())
    other_nonce = server_for(mech, salt, "another-server-nonce")
    other_nonce.evaluate(client_first.encode())
    with pytest.raises(SaslError, match="nonce"):
        other_nonce.evaluate(client_final.encode())
    with pytest.raises(SaslError):  # a failed exchange stays failed
        other_nonce.evaluate(client_final.encode())


def test_unknown_user_fails_at_the_first_message() -> None:
    mech, salt, _, nonce, _, _, _ = VECTORS["rfc7677-sha256"]
    with pytest.raises(SaslError, match="Invalid user credentials"):
        server_for(mech, salt, nonce).evaluate(b"n,,n=someone,r=abc")


def test_authzid_must_be_the_user_and_tokens_are_refused() -> None:
    mech, salt, _, nonce, _, _, _ = VECTORS["rfc7677-sha256"]
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        server_for(mech, salt, nonce).evaluate(b"n,a=admin,n=user,r=abc")
    assert server_for(mech, salt, nonce).evaluate(b"n,a=user,n=user,r=abc").startswith(b"r=abc")
    with pytest.raises(SaslError, match="Token"):
        server_for(mech, salt, nonce).evaluate(b"n,,n=user,r=abc,tokenauth=true")


@pytest.mark.parametrize("message", [b"", b"n,,n=user", b"y,,n=user,r=a", b"n,,n=us,er,r=a",
                                     b"n,,n=user,r=a b,c", "n,,n=üser,r=a".encode(), b"\xff"])
def test_malformed_client_first_messages(message: bytes) -> None:
    mech, salt, _, nonce, _, _, _ = VECTORS["rfc7677-sha256"]
    with pytest.raises(SaslError):
        server_for(mech, salt, nonce).evaluate(message)


def test_saslname_escapes() -> None:
    assert saslname_from_username("a=b,c") == "a=3Db=2Cc"
    assert username_from_saslname("a=3Db=2Cc") == "a=b,c"
