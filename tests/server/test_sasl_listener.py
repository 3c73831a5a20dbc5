"""SASL on a listener, frame by frame: Kafka's `SaslServerAuthenticator` state machine with
PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER, the answers to requests out of place, and the
principal a connection ends up with."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run
from helpers.sasl_wire import (
    ScramClient,
    authenticate,
    connect,
    handshake,
    oauth_initial_response,
    plain_login,
    scram_login,
    token_for,
    unsecured_jws,
)

from groupcoord.security.config import SecurityConfig
from groupcoord.security.principal import KafkaPrincipal
from groupcoord.security.scram import SHA_256, SHA_512, credential_from_password
from groupcoord.server.config import Listener
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from groupcoord.wire.generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupcoord.wire.generated.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.wire.generated.metadata import MetadataRequest, MetadataResponse

ALL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism "


def sasl_broker(tmp_path: Path, **security: Any) -> InProcBroker:
    users = tmp_path / "users"
    users.write_text("alice=alice-secret\nadmin=admin-secret\n")
    settings: dict[str, Any] = {"sasl_enabled_mechanisms": ALL, "sasl_plain_users": str(users)}
    settings.update(security)
    return InProcBroker(
        tmp_path / "data",
        listeners=(Listener("127.0.0.1", 0, "SASL_PLAINTEXT"), Listener("127.0.0.1", 0)),
        security=SecurityConfig(**settings))


def add_scram_users(broker: InProcBroker) -> None:
    store = broker.broker.scram_credentials
    store.apply([("alice", "SCRAM-SHA-256", credential_from_password(SHA_256, "alice-secret")),
                 ("alice", "SCRAM-SHA-512", credential_from_password(SHA_512, "alice-secret"))])


async def metadata_ok(client: Any) -> MetadataResponse:
    return await client.call(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12,
                             MetadataResponse)


def principals(broker: InProcBroker) -> set[str]:
    return {str(conn.principal) for conn in broker.broker.connections}


def test_plain_login_then_requests_are_served(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            client = await connect(b.port)
            versions = await client.call(ApiVersionsRequest(client_software_name="t",
                                                            client_software_version="1"), 3,
                                         ApiVersionsResponse)
            keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
            assert keys[17] == (0, 1) and keys[36] == (0, 2)
            assert keys[50] == (0, 0) and keys[51] == (0, 0)
            shake = await handshake(client, "PLAIN")
            assert shake.error_code == 0 and list(shake.mechanisms) == list(ALL)
            done = await authenticate(client, b"\0alice\0alice-secret")
            assert (done.error_code, done.error_message, done.session_lifetime_ms) == (0, "", 0)
            assert (await metadata_ok(client)).brokers[0].port == b.port
            assert principals(b) == {"User:alice"}
    run(main())


def test_wrong_password_answers_58_and_closes(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            client = await connect(b.port)
            failed = await plain_login(client, "alice", "nope")
            assert failed.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED == 58
            assert failed.error_message == "Authentication failed: Invalid username or password"
            assert await client.closed()
            unknown = await connect(b.port)
            failed = await plain_login(unknown, "mallory", "x")
            assert failed.error_message == "Authentication failed: Invalid username or password"
            assert await unknown.closed()
    run(main())


@pytest.mark.parametrize("token,message", [
    (b"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\0alice\0x\0y", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"\0\0secret", "Authentication failed: username not specified")])
def test_malformed_plain_is_refused_with_kafkas_message(tmp_path: Path, token: bytes,
                                                        message: str) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            client = await connect(b.port)
            await handshake(client, "PLAIN")
            failed = await authenticate(client, token)
            assert (failed.error_code, failed.error_message) == (58, message)
            assert await client.closed()
    run(main())


def test_other_requests_before_authentication_close(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            first = await connect(b.port)
            await first.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)
            assert await first.closed()
            after_handshake = await connect(b.port)
            await handshake(after_handshake, "PLAIN")
            # A request of another API while tokens are expected: ILLEGAL_SASL_STATE, close.
            refused = await after_handshake.call(ListGroupsRequest(), 4, ListGroupsResponse)
            assert refused.error_code == ErrorCode.ILLEGAL_SASL_STATE
            assert await after_handshake.closed()
            twice = await connect(b.port)
            request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
            await twice.call(request, 3, ApiVersionsResponse)
            await twice.send(request, 3)
            assert await twice.closed()
    run(main())


def test_unsupported_mechanism_lists_the_enabled_ones_and_closes(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path, sasl_enabled_mechanisms=("SCRAM-SHA-512",)) as b:
            client = await connect(b.port)
            answer = await handshake(client, "PLAIN")
            assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
            assert list(answer.mechanisms) == ["SCRAM-SHA-512"]
            assert await client.closed()
    run(main())


def test_handshake_v0_exchanges_raw_tokens(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            client = await connect(b.port)
            assert (await handshake(client, "PLAIN", version=0)).error_code == 0
            token = b"\0alice\0alice-secret"
            await client.send_raw(len(token).to_bytes(4, "big") + token)
            assert await client.read_frame() == b""  # PLAIN's empty final token
            assert (await metadata_ok(client)).brokers
            bad = await connect(b.port)
            await handshake(bad, "PLAIN", version=0)
            token = b"\0alice\0wrong"
            await bad.send_raw(len(token).to_bytes(4, "big") + token)
            assert await bad.closed()  # raw tokens: no error response, just the close
    run(main())


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_login_and_failures(tmp_path: Path, mechanism: str) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            add_scram_users(b)
            client = await connect(b.port)
            final, scram = await scram_login(client, mechanism, "alice", "alice-secret")
            assert final.error_code == 0 and scram.server_final_ok(final.auth_bytes)
            assert (await metadata_ok(client)).brokers
            assert principals(b) == {"User:alice"}
            for user, password in (("alice", "wrong"), ("nobody", "alice-secret")):
                bad = await connect(b.port)
                failed, _ = await scram_login(bad, mechanism, user, password)
                assert (failed.error_code, failed.error_message) == (58, GENERIC + mechanism)
                assert await bad.closed()
    run(main())


def test_scram_with_a_wrong_nonce_or_garbage_fails(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            add_scram_users(b)
            client = await connect(b.port)
            scram = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
            await handshake(client, "SCRAM-SHA-256")
            first = await authenticate(client, scram.first())
            forged = first.auth_bytes.decode().split(",")[0][2:] + "forged"
            failed = await authenticate(client, scram.final(first.auth_bytes, forged))
            assert (failed.error_code, failed.error_message) == (58, GENERIC + "SCRAM-SHA-256")
            assert await client.closed()
            for garbage in (b"", b"\xff\xfe", b"n,,n=alice", b"y,,n=alice,r=abc",
                            b"p=tls-unique,,n=alice,r=abc", bytes(range(256)) * 100):
                other = await connect(b.port)
                await handshake(other, "SCRAM-SHA-256")
                failed = await authenticate(other, garbage)
                assert failed.error_code == 58
                assert await other.closed()
    run(main())


def test_oauthbearer_unsecured_tokens(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path, connections_max_reauth_ms=600_000) as b:
            client = await connect(b.port)
            await handshake(client, "OAUTHBEARER")
            done = await authenticate(client, oauth_initial_response(token_for("svc", 60)))
            assert done.error_code == 0
            # The session ends with the token, earlier than connections.max.reauth.ms.
            assert 55_000 <= done.session_lifetime_ms <= 60_000
            assert principals(b) == {"User:svc"}
            for token in (token_for("svc", -10), unsecured_jws({"sub": "svc"}),
                          unsecured_jws({"sub": "svc", "exp": 4e9}, alg="HS256"),
                          unsecured_jws({"exp": 4e9})):
                bad = await connect(b.port)
                await handshake(bad, "OAUTHBEARER")
                challenge = await authenticate(bad, oauth_initial_response(token))
                assert (challenge.error_code, challenge.auth_bytes) == (
                    0, b'{"status":"invalid_token"}')
                failed = await authenticate(bad, b"\x01")
                assert (failed.error_code, failed.error_message) == (
                    58, '{"status":"invalid_token"}')
                assert await bad.closed()
    run(main())


def test_failed_authentication_close_is_delayed(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path, connection_failed_authentication_delay_ms=300) as b:
            client = await connect(b.port)
            assert (await plain_login(client, "alice", "nope")).error_code == 58
            # The answer came at once; the close follows after the delay.
            assert not await client.closed(timeout=0.1)
            assert await client.closed(timeout=5)
    run(main())


def test_plaintext_listener_answers_sasl_requests_with_illegal_state(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            client = await connect(b.broker.bound[1].port)
            assert (await handshake(client, "PLAIN")).error_code == ErrorCode.ILLEGAL_SASL_STATE
            answer = await authenticate(client, b"\0alice\0alice-secret")
            assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE
            assert answer.error_message == ("SaslAuthenticate request received after "
                                            "successful authentication")
            assert principals(b) == {str(KafkaPrincipal("User", "ANONYMOUS"))}
    run(main())


def test_each_listener_advertises_itself(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            sasl_port, plain_port = (bound.port for bound in b.broker.bound)
            plain = await connect(plain_port)
            assert (await metadata_ok(plain)).brokers[0].port == plain_port
            client = await connect(sasl_port)
            await plain_login(client, "alice", "alice-secret")
            assert (await metadata_ok(client)).brokers[0].port == sasl_port
            for conn, port in ((plain, plain_port), (client, sasl_port)):
                found = await conn.call(FindCoordinatorRequest(key_type=0,
                                                               coordinator_keys=["g"]), 4,
                                        FindCoordinatorResponse)
                assert found.coordinators[0].port == port
                cluster = await conn.call(DescribeClusterRequest(), 1, DescribeClusterResponse)
                assert cluster.brokers[0].port == port
    run(main())


def test_advertised_listener_per_name(tmp_path: Path) -> None:
    async def main() -> None:
        async with InProcBroker(
                tmp_path / "data",
                listeners=(Listener("127.0.0.1", 0), Listener("127.0.0.1", 0, "INTERNAL")),
                listener_security_protocol_map="INTERNAL:PLAINTEXT",
                advertised_listeners=(Listener("kafka.example", 19092, "INTERNAL"),)) as b:
            internal = await connect(b.broker.bound[1].port)
            answer = await metadata_ok(internal)
            assert (answer.brokers[0].host, answer.brokers[0].port) == ("kafka.example", 19092)
            plain = await connect(b.port)
            assert (await metadata_ok(plain)).brokers[0].port == b.port
    run(main())


def test_oversized_frame_before_authentication_closes(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            client = await connect(b.port)
            await handshake(client, "PLAIN")
            await client.send_raw((524288 + 1).to_bytes(4, "big") + b"\0" * 1024)
            assert await client.closed()
            big = await connect(b.port)
            await handshake(big, "PLAIN")
            # Under the limit but no valid PLAIN message: the generic failure.
            failed = await authenticate(big, b"\0alice\0" + b"x" * 400_000)
            assert failed.error_code == 58
            assert await big.closed()
    run(main())


def test_garbage_frames_during_authentication_close(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            for frame in (b"\x00\x24\x00\x02\x00\x00\x00\x01\xff",  # SaslAuthenticate, cut off
                          b"\x00\x24\x00\x09\x00\x00\x00\x01\x00\x00",  # unknown version
                          b"\x7f\x7f\x00\x00\x00\x00\x00\x01\x00\x00",  # unknown api key
                          b"\x00"):
                client = await connect(b.port)
                await handshake(client, "PLAIN")
                await client.send_raw(len(frame).to_bytes(4, "big") + frame)
                assert await client.closed()
            healthy = await connect(b.port)
            assert (await plain_login(healthy, "alice", "alice-secret")).error_code == 0
    run(main())


def test_a_thousand_failed_logins_while_a_good_client_works(tmp_path: Path) -> None:
    async def main() -> None:
        async with sasl_broker(tmp_path) as b:
            good = await connect(b.port)
            await plain_login(good, "alice", "alice-secret")

            async def attacker(count: int) -> int:
                failures = 0
                for i in range(count):
                    client = await connect(b.port)
                    failed = await plain_login(client, "alice", "guess")
                    # Each is closed after the failed-authentication delay; check a sample
                    # rather than wait that long for every one.
                    failures += failed.error_code == 58 and bool(i % 50 or await client.closed())
                    await client.close()
                return failures

            async def worker() -> int:
                served = 0
                for _ in range(50):
                    served += bool((await metadata_ok(good)).brokers)
                    await asyncio.sleep(0)
                return served

            *failures, served = await asyncio.gather(*(attacker(250) for _ in range(4)),
                                                     worker())
            assert sum(failures) == 1000 and served == 50
            assert (await metadata_ok(good)).brokers
            # Refused connections linger as anonymous for the close delay; none got further.
            assert principals(b) - {"User:ANONYMOUS"} == {"User:alice"}
    run(main())
