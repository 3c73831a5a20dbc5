"""Kafka's `KafkaPrincipal`: the identity a connection authenticated as.

A connection starts as `User:ANONYMOUS` (PLAINTEXT, or SSL without a client certificate)
and is given its principal by the SASL exchange or the client certificate. ACLs name
principals by their string form, `<type>:<name>`, as Kafka's `KafkaPrincipal.toString`.
"""

from __future__ import annotations

from typing import NamedTuple

USER_TYPE = "User"


class KafkaPrincipal(NamedTuple):
    """A principal (a NamedTuple: every connection holds one from the start, and a
    dataclass costs its generated code before the broker binds its listeners)."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """`User:alice` -> KafkaPrincipal("User", "alice"); raises ValueError without a ':'."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type:
            raise ValueError(f"expected <type>:<name>, got {text!r}")
        return cls(principal_type, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
