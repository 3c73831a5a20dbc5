"""KIP-368 re-authentication: the session lifetime SaslAuthenticate v1+ reports, the close of
a connection whose session expired, and what a re-authentication may not change. The
broker's session clock is replaced by a manual one, so no test waits for real time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker_inproc import InProcBroker, run
from helpers.sasl_wire import ManualClock, connect, handshake, plain_login

from groupcoord.security.config import SecurityConfig
from groupcoord.server.config import Listener
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.metadata import MetadataRequest, MetadataResponse

LIFETIME_MS = 60_000


async def started(tmp_path: Path) -> tuple[InProcBroker, ManualClock]:
    users = tmp_path / "users"
    users.write_text("alice=alice-secret\nadmin=admin-secret\n")
    broker = InProcBroker(tmp_path / "data", listeners=(Listener("127.0.0.1", 0, "SASL_PLAINTEXT"),),
                          security=SecurityConfig(
                              sasl_enabled_mechanisms=("PLAIN", "SCRAM-SHA-256"),
                              sasl_plain_users=str(users),
                              connections_max_reauth_ms=LIFETIME_MS))
    await broker.__aenter__()
    clock = ManualClock()
    services = broker.broker.listener_security[0].sasl
    assert services is not None
    services.monotonic = clock
    return broker, clock


async def metadata(client: Any) -> MetadataResponse:
    return await client.call(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12,
                             MetadataResponse)


def test_session_lifetime_and_expiry(tmp_path: Path) -> None:
    async def main() -> None:
        b, clock = await started(tmp_path)
        try:
            client = await connect(b.port)
            done = await plain_login(client, "alice", "alice-secret")
            assert (done.error_code, done.session_lifetime_ms) == (0, LIFETIME_MS)
            clock.now += 59.0
            assert (await metadata(client)).brokers
            clock.now += 2.0
            await client.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)
            assert await client.closed()
            v0 = await connect(b.port)
            # SaslAuthenticate v0 has no lifetime field; the session still expires.
            assert (await plain_login(v0, "alice", "alice-secret", version=0)).error_code == 0
            clock.now += 61.0
            await v0.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)
            assert await v0.closed()
        finally:
            await b.__aexit__(None, None, None)
    run(main())


def test_reauthentication_extends_the_session(tmp_path: Path) -> None:
    async def main() -> None:
        b, clock = await started(tmp_path)
        try:
            client = await connect(b.port)
            await plain_login(client, "alice", "alice-secret")
            clock.now += 30.0
            again = await plain_login(client, "alice", "alice-secret")
            assert (again.error_code, again.session_lifetime_ms) == (0, LIFETIME_MS)
            clock.now += 40.0  # past the first session's end, inside the second's
            assert (await metadata(client)).brokers
            assert (await plain_login(client, "alice", "alice-secret")).error_code == 0
            # A handshake within a second of the last re-authentication's start is not a
            # re-authentication: the handlers answer it with ILLEGAL_SASL_STATE.
            clock.now += 0.5
            assert (await handshake(client, "PLAIN")).error_code == ErrorCode.ILLEGAL_SASL_STATE
        finally:
            await b.__aexit__(None, None, None)
    run(main())


def test_reauthentication_may_not_change_the_principal(tmp_path: Path) -> None:
    async def main() -> None:
        b, clock = await started(tmp_path)
        try:
            client = await connect(b.port)
            await plain_login(client, "alice", "alice-secret")
            clock.now += 10.0
            failed = await plain_login(client, "admin", "admin-secret")
            assert failed.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert failed.error_message == ("Cannot change principals during re-authentication "
                                            "from User.alice: User.admin")
            assert await client.closed()
        finally:
            await b.__aexit__(None, None, None)
    run(main())


def test_reauthentication_may_not_change_the_mechanism(tmp_path: Path) -> None:
    async def main() -> None:
        b, clock = await started(tmp_path)
        try:
            client = await connect(b.port)
            await plain_login(client, "alice", "alice-secret")
            clock.now += 10.0
            assert (await handshake(client, "SCRAM-SHA-256")).error_code == 0
            await authenticate_then_closed(client)
        finally:
            await b.__aexit__(None, None, None)
    run(main())


async def authenticate_then_closed(client: Any) -> None:
    from groupcoord.wire.generated.sasl_authenticate import SaslAuthenticateRequest

    await client.send(SaslAuthenticateRequest(auth_bytes=b"n,,n=alice,r=abc"), 2)
    assert await client.closed()  # Kafka's REAUTH_BAD_MECHANISM: closed without an answer

