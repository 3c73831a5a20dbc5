"""A raw Kafka wire client for SASL and TLS listeners: connect (optionally over TLS), then
drive SaslHandshake / SaslAuthenticate by hand, so tests see exactly what the broker
answers at each step. The SCRAM client side follows RFC 5802 with our SCRAM arithmetic
(itself checked against the RFC test vectors)."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import struct
import time
from pathlib import Path
from typing import Any

from server.broker_inproc import RawClient

from groupcoord.security.scram import MECHANISMS, client_proof, salted_password
from groupcoord.security.scram import server_key as scram_server_key
from groupcoord.security.scram import server_signature as scram_server_signature
from groupcoord.wire.generated.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from groupcoord.wire.generated.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse

_I32 = struct.Struct(">i")


def client_tls(ca: Path, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key) if key else None)
    return context


async def connect(port: int, tls: ssl.SSLContext | None = None) -> RawClient:
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=tls, server_hostname="localhost" if tls else None)
    return RawClient(reader, writer)


async def handshake(client: RawClient, mechanism: str, version: int = 1) -> Any:
    return await client.call(SaslHandshakeRequest(mechanism=mechanism), version,
                             SaslHandshakeResponse)


async def authenticate(client: RawClient, token: bytes, version: int = 2) -> Any:
    return await client.call(SaslAuthenticateRequest(auth_bytes=token), version,
                             SaslAuthenticateResponse)


async def plain_login(client: RawClient, user: str, password: str, version: int = 2) -> Any:
    await handshake(client, "PLAIN")
    return await authenticate(client, f"\0{user}\0{password}".encode(), version)


class ScramClient:
    """The client half of one SCRAM exchange."""

    def __init__(self, mechanism: str, user: str, password: str,
                 nonce: str = "fyko+d2lbbFgONRv9qkxdawL") -> None:
        self.mech = MECHANISMS[mechanism]
        self.user = user
        self.password = password
        self.nonce = nonce
        self.first_bare = f"n={user},r={nonce}"
        self.server_first = ""
        self.auth_message = b""
        self.salted = b""

    def first(self) -> bytes:
        return f"n,,{self.first_bare}".encode()

    def final(self, server_first: bytes, nonce_override: str | None = None) -> bytes:
        self.server_first = server_first.decode()
        fields = dict(item.split("=", 1) for item in self.server_first.split(","))
        nonce = nonce_override or fields["r"]
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        self.salted = salted_password(self.mech.hash_name, self.password.encode(), salt,
                                      iterations)
        without_proof = f"c=biws,r={nonce}"
        self.auth_message = f"{self.first_bare},{self.server_first},{without_proof}".encode()
        proof = client_proof(self.mech.hash_name, self.salted, self.auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def server_final_ok(self, server_final: bytes) -> bool:
        key = scram_server_key(self.mech.hash_name, self.salted)
        expected = scram_server_signature(self.mech.hash_name, key, self.auth_message)
        return server_final == b"v=" + base64.b64encode(expected)


async def scram_login(client: RawClient, mechanism: str, user: str,
                      password: str) -> tuple[Any, ScramClient]:
    """Run the exchange; returns the last SaslAuthenticate response and the client."""
    scram = ScramClient(mechanism, user, password)
    await handshake(client, mechanism)
    first = await authenticate(client, scram.first())
    if first.error_code:
        return first, scram
    return await authenticate(client, scram.final(first.auth_bytes)), scram


def unsecured_jws(claims: dict[str, Any], alg: str = "none") -> str:
    def part(value: dict[str, Any]) -> str:
        raw = json.dumps(value).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    return f"{part({'alg': alg})}.{part(claims)}."


def oauth_initial_response(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def token_for(subject: str, lifetime_s: int = 3600) -> str:
    """A token valid for at most `lifetime_s` from now (whole seconds, as JWTs carry)."""
    now = int(time.time())
    return unsecured_jws({"sub": subject, "iat": now, "exp": now + lifetime_s})


class ManualClock:
    """A monotonic clock the test advances (the broker's SASL session clock)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now
