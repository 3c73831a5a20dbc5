"""Client-side SASL for the admin CLI: PLAIN and SCRAM-SHA-256/512 over SaslHandshake v1 and
SaslAuthenticate, as a Kafka client does on a SASL_PLAINTEXT or SASL_SSL listener.

`connect` opens a `WireClient` (TLS when the protocol says so) and logs in; the options are
the client properties of `kafka-acls.sh --command-config` as flags.
"""

from __future__ import annotations

import argparse
import base64
import secrets
import ssl

from groupcoord.cli.wire_client import KafkaError, WireClient, check
from groupcoord.security.scram import (
    MECHANISMS,
    client_proof,
    salted_password,
    server_key,
    server_signature,
)
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.sasl_authenticate import SaslAuthenticateRequest
from groupcoord.wire.generated.sasl_handshake import SaslHandshakeRequest

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--security-protocol", choices=PROTOCOLS, default="PLAINTEXT",
                   help="security.protocol of the connection")
    p.add_argument("--sasl-mechanism", default="PLAIN",
                   choices=("PLAIN", *sorted(MECHANISMS)), help="sasl.mechanism")
    p.add_argument("--sasl-username", default=None)
    p.add_argument("--sasl-password", default=None)
    p.add_argument("--ssl-ca", default=None, metavar="PEM",
                   help="CA certificates that sign the broker's (ssl.truststore.location)")


def connect(bootstrap: str, args: argparse.Namespace) -> WireClient:
    protocol = args.security_protocol
    tls = None
    if protocol in ("SSL", "SASL_SSL"):
        tls = ssl.create_default_context(cafile=args.ssl_ca)
    client = WireClient(bootstrap, tls=tls)
    if protocol.startswith("SASL_"):
        if args.sasl_username is None or args.sasl_password is None:
            client.close()
            raise ValueError("--sasl-username and --sasl-password are required with SASL")
        try:
            login(client, args.sasl_mechanism, args.sasl_username, args.sasl_password)
        except BaseException:
            client.close()
            raise
    return client


def login(client: WireClient, mechanism: str, user: str, password: str) -> None:
    shake, _ = client.request(SaslHandshakeRequest(mechanism=mechanism), 1)
    check(shake.error_code, f"SaslHandshake {mechanism}")
    if mechanism == "PLAIN":
        _step(client, f"\0{user}\0{password}".encode())
        return
    _scram(client, mechanism, user, password)


def _step(client: WireClient, token: bytes) -> bytes:
    response, _ = client.request(SaslAuthenticateRequest(auth_bytes=token), 2)
    if response.error_code:
        raise KafkaError(response.error_code, f"SaslAuthenticate: {response.error_message}")
    return bytes(response.auth_bytes)


def _scram(client: WireClient, mechanism: str, user: str, password: str) -> None:
    """RFC 5802 client: first message, proof, and the server's signature checked."""
    hash_name = MECHANISMS[mechanism].hash_name
    name = user.replace("=", "=3D").replace(",", "=2C")
    first_bare = f"n={name},r={secrets.token_urlsafe(18)}"
    server_first = _step(client, f"n,,{first_bare}".encode()).decode()
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    salted = salted_password(hash_name, password.encode(), base64.b64decode(fields["s"]),
                             int(fields["i"]))
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    proof = base64.b64encode(client_proof(hash_name, salted, auth_message)).decode()
    server_final = _step(client, f"{without_proof},p={proof}".encode())
    expected = server_signature(hash_name, server_key(hash_name, salted), auth_message)
    if server_final != b"v=" + base64.b64encode(expected):
        raise KafkaError(ErrorCode.SASL_AUTHENTICATION_FAILED, "SCRAM server signature")
