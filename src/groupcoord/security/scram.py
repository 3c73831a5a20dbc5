"""SCRAM arithmetic (RFC 5802 section 3, RFC 7677) and the credential Kafka stores.

    SaltedPassword  = Hi(password, salt, i)            (PBKDF2 with HMAC-H)
    ClientKey       = HMAC(SaltedPassword, "Client Key")
    StoredKey       = H(ClientKey)
    ServerKey       = HMAC(SaltedPassword, "Server Key")
    ClientSignature = HMAC(StoredKey, AuthMessage)
    ClientProof     = ClientKey XOR ClientSignature
    ServerSignature = HMAC(ServerKey, AuthMessage)

A broker keeps only (salt, iterations, StoredKey, ServerKey) per user and mechanism, as
Kafka's `ScramCredential`: enough to check a proof and sign the answer, never the password.
Mechanisms carry Kafka's numeric type (`ScramMechanism.type()`, used on the wire by the
User SCRAM credential APIs) and minimum iterations; the hash is a parameter so the maths can
also be checked against RFC 5802's SHA-1 example.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

from groupcoord.security.config import SCRAM_SHA_256, SCRAM_SHA_512

# Kafka's ScramControlManager.MAX_ITERATIONS (AlterUserScramCredentials refuses more).
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096
SALT_BYTES = 32


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str
    hash_name: str
    type_id: int
    min_iterations: int


SHA_256 = ScramMechanism(SCRAM_SHA_256, "sha256", 1, 4096)
SHA_512 = ScramMechanism(SCRAM_SHA_512, "sha512", 2, 4096)
MECHANISMS: dict[str, ScramMechanism] = {m.name: m for m in (SHA_256, SHA_512)}
BY_TYPE: dict[int, ScramMechanism] = {m.type_id: m for m in (SHA_256, SHA_512)}


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(hash_name: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name).digest()


def salted_password(hash_name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)


def client_key(hash_name: str, salted: bytes) -> bytes:
    return _hmac(hash_name, salted, b"Client Key")


def server_key(hash_name: str, salted: bytes) -> bytes:
    return _hmac(hash_name, salted, b"Server Key")


def stored_key(hash_name: str, key: bytes) -> bytes:
    return hashlib.new(hash_name, key).digest()


def client_signature(hash_name: str, stored: bytes, auth_message: bytes) -> bytes:
    return _hmac(hash_name, stored, auth_message)


def server_signature(hash_name: str, server: bytes, auth_message: bytes) -> bytes:
    return _hmac(hash_name, server, auth_message)


def xor(left: bytes, right: bytes) -> bytes:
    if len(left) != len(right):
        raise ValueError("SCRAM values of different lengths")
    return bytes(a ^ b for a, b in zip(left, right, strict=True))


def client_proof(hash_name: str, salted: bytes, auth_message: bytes) -> bytes:
    """What a client sends (used by the CLI's own client and by tests)."""
    key = client_key(hash_name, salted)
    return xor(key, client_signature(hash_name, stored_key(hash_name, key), auth_message))


def proof_matches(hash_name: str, credential: ScramCredential, auth_message: bytes,
                  proof: bytes) -> bool:
    """Recover ClientKey from the proof and compare its hash with StoredKey in constant time."""
    signature = client_signature(hash_name, credential.stored_key, auth_message)
    if len(proof) != len(signature):
        return False
    return hmac.compare_digest(stored_key(hash_name, xor(proof, signature)),
                               credential.stored_key)


def credential_from_salted(hash_name: str, salted: bytes, salt: bytes,
                           iterations: int) -> ScramCredential:
    """Kafka's `ScramFormatter` step from SaltedPassword to what is stored."""
    return ScramCredential(salt, stored_key(hash_name, client_key(hash_name, salted)),
                           server_key(hash_name, salted), iterations)


def credential_from_password(mechanism: ScramMechanism, password: str,
                             iterations: int = DEFAULT_ITERATIONS,
                             salt: bytes | None = None) -> ScramCredential:
    salt = os.urandom(SALT_BYTES) if salt is None else salt  # secrets.token_bytes
    salted = salted_password(mechanism.hash_name, password.encode("utf-8"), salt, iterations)
    return credential_from_salted(mechanism.hash_name, salted, salt, iterations)
