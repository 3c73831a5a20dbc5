"""Hostile input on a SASL listener: valid login sequences (ApiVersions, SaslHandshake v0/v1,
SaslAuthenticate with PLAIN and SCRAM tokens) with one frame mutated by `helpers.frames`
(bit flips, splats, truncation, lying and absurd lengths, wrong keys and versions, tagged
garbage), thousands of connections. The broker must answer or close each, log no error
(no handler crash), let no connection authenticate as anyone but the real user, and keep
serving a good client."""

from __future__ import annotations

import asyncio
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, RawClient, run
from helpers.frames import Mutator, Seed
from helpers.sasl_wire import ScramClient, connect, plain_login

from groupcoord.security.config import SecurityConfig
from groupcoord.security.scram import SHA_256, credential_from_password
from groupcoord.server.config import Listener
from groupcoord.wire.generated.api_versions import ApiVersionsRequest
from groupcoord.wire.generated.metadata import MetadataRequest, MetadataResponse
from groupcoord.wire.generated.sasl_authenticate import SaslAuthenticateRequest
from groupcoord.wire.generated.sasl_handshake import SaslHandshakeRequest

CONNECTIONS = 3000
CONCURRENCY = 24
FUZZ_SEED = 20261127


def body(request: Any, version: int) -> bytes:
    return RawClient.frame(request, version, 1)[4:]


def sequences() -> list[list[Seed]]:
    versions = ApiVersionsRequest(client_software_name="fuzz", client_software_version="1")
    scram_first = ScramClient("SCRAM-SHA-256", "alice", "alice-secret").first()
    raw_plain = b"\0alice\0alice-secret"
    steps = [
        [(versions, 3), (SaslHandshakeRequest(mechanism="PLAIN"), 1),
         (SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"), 2)],
        [(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1),
         (SaslAuthenticateRequest(auth_bytes=scram_first), 1),
         (SaslAuthenticateRequest(auth_bytes=b"c=biws,r=x,p=AAAA"), 1)],
        [(SaslHandshakeRequest(mechanism="PLAIN"), 0)],
        [(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1),
         (SaslAuthenticateRequest(auth_bytes=b"n,,\x01auth=Bearer a.b.\x01\x01"), 0)],
    ]
    out = []
    for step in steps:
        seeds = [Seed(type(r).__name__, body(r, v), r.FLEXIBLE_MIN is not None
                      and v >= r.FLEXIBLE_MIN) for r, v in step]
        out.append(seeds)
    out[2].append(Seed("raw PLAIN token", raw_plain, False))
    return out


async def hostile(port: int, chunks: list[bytes]) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return
    try:
        writer.write(b"".join(chunks))
        await writer.drain()
        while await asyncio.wait_for(reader.read(1 << 16), 0.5):
            pass
    except (OSError, TimeoutError):
        pass
    finally:
        writer.close()


async def metadata(client: Any) -> MetadataResponse:
    return await client.call(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12,
                             MetadataResponse)


def test_mutated_login_sequences(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    users = tmp_path / "users"
    users.write_text("alice=alice-secret\n")
    rng = random.Random(FUZZ_SEED)
    plans = sequences()

    def chunks() -> list[bytes]:
        seeds = rng.choice(plans)
        target = rng.randrange(len(seeds))
        mutate = Mutator([seeds[target]], rng.randrange(1 << 30))
        return [mutate() if i == target else len(s.body).to_bytes(4, "big") + s.body
                for i, s in enumerate(seeds)]

    async def main() -> None:
        async with InProcBroker(
                tmp_path / "data", listeners=(Listener("127.0.0.1", 0, "SASL_PLAINTEXT"),),
                security=SecurityConfig(
                    sasl_enabled_mechanisms=("PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"),
                    sasl_plain_users=str(users),
                    connection_failed_authentication_delay_ms=0)) as b:
            b.broker.scram_credentials.apply(
                [("alice", "SCRAM-SHA-256", credential_from_password(SHA_256, "alice-secret"))])
            good = await connect(b.port)
            assert (await plain_login(good, "alice", "alice-secret")).error_code == 0
            queue = [chunks() for _ in range(CONNECTIONS)]

            async def worker() -> None:
                while queue:
                    await hostile(b.port, queue.pop())

            await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
            assert (await metadata(good)).brokers
            fresh = await connect(b.port)
            assert (await plain_login(fresh, "alice", "alice-secret")).error_code == 0
            principals = {str(c.principal) for c in b.broker.connections}
            assert principals <= {"User:alice", "User:ANONYMOUS"}

    with caplog.at_level(logging.WARNING):
        run(main())
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors[:3]
    assert any("during SASL authentication" in r.getMessage() for r in caplog.records)
