"""SASL/SCRAM-SHA-256 and -512 server (RFC 5802, RFC 7677), as Kafka's `ScramSaslServer`.

Two rounds: client-first -> server-first (combined nonce, salt, iterations), client-final
(proof) -> server-final (`v=` server signature). Messages are matched with Kafka's patterns
(`ScramMessages`): gs2 header `n,[a=authzid],` only (no channel binding), user names with
`=2C`/`=3D` escapes, extensions. Every failure except a foreign authorization id is a
`SaslError`, so the client sees Kafka's generic text and cannot tell an unknown user from a
wrong password; an unknown user fails at the first round, as in Kafka. Delegation tokens
(`tokenauth=true`) are not served and fail as Kafka fails an unknown token id.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from collections.abc import Callable

from groupcoord.security.sasl_errors import SaslAuthenticationError, SaslError
from groupcoord.security.scram import ScramCredential, ScramMechanism, proof_matches
from groupcoord.security.scram import server_signature as compute_server_signature

# Kafka's ScramMessages building blocks, with Java's `[a&&[^b]]` classes spelled out.
_SAFE = r"\x01-\x2B\x2D-\x3C\x3E-\x7F"  # \x01-\x7F except ',' and '='
_SASLNAME = rf"(?:[{_SAFE}]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"  # \x21-\x7E except ','
_VALUE_SAFE = rf"[{_SAFE}]+"
_B64 = "[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE_SAFE})*"
CLIENT_FIRST = re.compile(
    rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)(?P<bare>(?:m={_VALUE_SAFE},)?"
    rf"n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))")
CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),"
    rf"p=(?P<proof>{_BASE64})")
TOKEN_AUTH = "tokenauth"

CredentialLookup = Callable[[str, str], ScramCredential | None]


def username_from_saslname(saslname: str) -> str:
    return saslname.replace("=2C", ",").replace("=3D", "=")


def saslname_from_username(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def server_nonce() -> str:
    """Kafka's `secureRandomString`: 130 random bits in base 36 (printable, no comma)."""
    value = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    while value:
        value, rem = divmod(value, 36)
        out.append(digits[rem])
    return "".join(reversed(out)) or "0"


def _extensions(text: str) -> dict[str, str]:
    pairs = (item.partition("=") for item in text.split(",") if item)
    return {key: value for key, _, value in pairs}


class ScramSaslServer:
    def __init__(self, mechanism: ScramMechanism, lookup: CredentialLookup,
                 nonce: Callable[[], str] = server_nonce) -> None:
        self.mechanism = mechanism.name
        self._mech = mechanism
        self._lookup = lookup
        self._nonce = nonce
        self._credential: ScramCredential | None = None
        self._first_bare = ""
        self._server_first = ""
        self._full_nonce = ""
        self.complete = False
        self._failed = False
        self.authorization_id = ""
        self.credential_expiry_ms: int | None = None

    def evaluate(self, response: bytes) -> bytes:
        if self._failed or self.complete:
            raise SaslError(f"Unexpected challenge in Sasl server state "
                            f"{'COMPLETE' if self.complete else 'FAILED'}")
        try:
            if self._credential is None:
                return self._client_first(response)
            return self._client_final(response)
        except (SaslError, SaslAuthenticationError):
            self._failed = True
            self._credential = None
            raise

    def _client_first(self, response: bytes) -> bytes:
        text = _ascii(response)
        match = CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise SaslError(f"Invalid SCRAM client first message format: {text[:200]!r}")
        username = username_from_saslname(match["saslname"])
        if _extensions(match["extensions"]).get(TOKEN_AUTH, "").lower() == "true":
            raise SaslError(f"Token Authentication failed: Invalid tokenId : {username}")
        credential = self._lookup(username, self._mech.name)
        if credential is None:
            raise SaslError("Authentication failed: Invalid user credentials")
        authzid = match["authzid"]
        if authzid and username_from_saslname(authzid) != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an "
                                          "authorization id that is different from username")
        if credential.iterations < self._mech.min_iterations:
            raise SaslError(f"Iterations {credential.iterations} is less than the minimum "
                            f"{self._mech.min_iterations} for {self._mech.name}")
        self._full_nonce = match["nonce"] + self._nonce()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._full_nonce},s={salt},i={credential.iterations}"
        self._first_bare = match["bare"]
        self._credential = credential
        self.authorization_id = username
        return self._server_first.encode()

    def _client_final(self, response: bytes) -> bytes:
        credential = self._credential
        assert credential is not None
        text = _ascii(response)
        match = CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise SaslError("Invalid SCRAM client final message format")
        if match["nonce"] != self._full_nonce:
            raise SaslError("Invalid client nonce in the final client message.")
        auth_message = f"{self._first_bare},{self._server_first},{match['without_proof']}"
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except binascii.Error as exc:
            raise SaslError("Invalid client credentials") from exc
        hash_name = self._mech.hash_name
        if not proof_matches(hash_name, credential, auth_message.encode(), proof):
            raise SaslError("Invalid client credentials")
        signature = compute_server_signature(hash_name, credential.server_key,
                                             auth_message.encode())
        self._credential = None
        self.complete = True
        return b"v=" + base64.b64encode(signature)


def _ascii(response: bytes) -> str:
    try:
        return response.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SaslError("SCRAM message is not UTF-8") from exc
