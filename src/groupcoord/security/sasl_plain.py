"""SASL/PLAIN (RFC 4616), as Kafka's `PlainSaslServer` with its JAAS users.

The message is `[authzid] NUL authcid NUL passwd`, split into three tokens the way Kafka
splits it (missing separators leave empty tokens). A malformed message is a `SaslError`
(the client sees the generic text); a wrong password, and an authorization id other than
the user name, are `SaslAuthenticationError`s with Kafka's messages.

Users come from a file of `name=password` lines (the analogue of `user_<name>="<password>"`
entries in Kafka's `PlainLoginModule` JAAS section); `#` starts a comment line.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from pathlib import Path

from groupcoord.security.config import PLAIN
from groupcoord.security.sasl_errors import SaslAuthenticationError, SaslError


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


def _split3(text: str) -> list[str]:
    """Kafka's `PlainSaslServer.split`: always three tokens; missing ones are empty and
    anything after a third NUL is dropped."""
    tokens = ["", "", ""]
    start = 0
    for i in range(3):
        end = text.find("\0", start)
        if end == -1:
            tokens[i] = text[start:]
            break
        tokens[i] = text[start:end]
        start = end + 1
    return tokens


class PlainSaslServer:
    mechanism = PLAIN

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id = ""
        self.credential_expiry_ms: int | None = None

    def evaluate(self, response: bytes) -> bytes:
        try:
            text = response.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SaslError("Invalid SASL/PLAIN response: not UTF-8") from exc
        authzid, username, password = _split3(text)
        if not username:
            raise SaslError("Authentication failed: username not specified")
        if not password:
            raise SaslError("Authentication failed: password not specified")
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
