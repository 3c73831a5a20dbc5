"""SASL/PLAIN (RFC 4616), as Kafka 4.4's `PlainSaslServer` with its JAAS users.

The message is `[authzid] NUL authcid NUL passwd`. Kafka splits it at up to four NULs and
wants exactly three tokens; it decodes the bytes as UTF-8 with replacement characters, as
Java's `new String(bytes, UTF_8)` does. Every refusal is a `SaslAuthenticationError` whose
message the client sees: a wrong token count, an empty user name or password, a wrong
password (the same text for an unknown user), an authorization id other than the user name.

Users come from a file of `name=password` lines (the analogue of `user_<name>="<password>"`
entries in Kafka's `PlainLoginModule` JAAS section); `#` starts a comment line.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from pathlib import Path

from groupcoord.security.config import PLAIN
from groupcoord.security.sasl_errors import SaslAuthenticationError


def load_plain_users(path: str) -> dict[str, str]:
    """Read a users file; ValueError names the first bad line."""
    users: dict[str, str] = {}
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, password = line.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{path}:{number}: expected name=password")
        users[name.strip()] = password
    return users


def _tokens(text: str) -> list[str]:
    """Kafka's `PlainSaslServer.extractTokens`: split at up to four NULs; three or else."""
    tokens = []
    start = 0
    for _ in range(4):
        end = text.find("\0", start)
        if end == -1:
            tokens.append(text[start:])
            break
        tokens.append(text[start:end])
        start = end + 1
    if len(tokens) != 3:
        raise SaslAuthenticationError(
            f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    return tokens


class PlainSaslServer:
    mechanism = PLAIN

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id = ""
        self.credential_expiry_ms: int | None = None

    def evaluate(self, response: bytes) -> bytes:
        authzid, username, password = _tokens(response.decode("utf-8", errors="replace"))
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        # Compared even for an unknown user, so the time taken does not tell which it was.
        matches = hmac.compare_digest((expected or "\0").encode(), password.encode())
        if expected is None or not matches:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an "
                                          "authorization id that is different from username")
        self.authorization_id = username
        self.complete = True
        return b""
