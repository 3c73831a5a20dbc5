"""What the broker asks of a SASL mechanism's server side (Java's `SaslServer`).

`evaluate` takes the client's token and returns the challenge (or the final server message);
it raises `SaslError` / `SaslAuthenticationError` on failure. Once `complete`, the
`authorization_id` is the authenticated user name and `credential_expiry_ms` the wall-clock
time the credential expires, when the mechanism knows one (OAUTHBEARER's `exp`), which bounds
the session as Kafka's `CREDENTIAL_LIFETIME_MS` negotiated property does.
"""

from __future__ import annotations

from typing import Protocol


class SaslServer(Protocol):
    mechanism: str

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str: ...

    @property
    def credential_expiry_ms(self) -> int | None: ...

    def evaluate(self, response: bytes) -> bytes: ...
