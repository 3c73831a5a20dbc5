"""The two ways a SASL exchange fails, as Kafka's `SaslServer` implementations signal them.

- `SaslAuthenticationError` (Kafka's `SaslAuthenticationException`): its message is safe to
  show the client and goes into the SaslAuthenticate response (`Authentication failed:
  Invalid username or password`).
- `SaslError` (Kafka's `javax.security.sasl.SaslException`): its message may reveal what the
  client must not learn (whether a user exists), so the client gets Kafka's generic
  `Authentication failed during authentication due to invalid credentials with SASL
  mechanism M` and the detail is only logged.
"""

from __future__ import annotations


class SaslError(Exception):
    """Authentication failed; the message stays on the broker."""


class SaslAuthenticationError(Exception):
    """Authentication failed; the message is sent to the client."""


def generic_failure_message(mechanism: str, reauthenticating: bool) -> str:
    """Kafka's client-facing text for a `SaslError` (SaslServerAuthenticator)."""
    phase = "re-authentication" if reauthenticating else "authentication"
    return (f"Authentication failed during {phase} due to invalid credentials with SASL "
            f"mechanism {mechanism}")
