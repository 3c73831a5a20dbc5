"""TLS listeners: the principal from the client certificate (Kafka's default mapping: the
full RFC 2253 subject; RULE: mappings), client-auth modes, SASL over TLS, and a client that
never finishes its handshake."""

from __future__ import annotations

import asyncio
import ssl
import time
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run
from helpers.certs import TlsMaterial, make_tls_material
from helpers.sasl_wire import client_tls, connect, plain_login

from groupcoord.security.config import SecurityConfig
from groupcoord.server.config import Listener
from groupcoord.wire.generated.metadata import MetadataRequest, MetadataResponse

SUBJECT = "/C=US/O=Test Org/OU=Clients/CN=alice"
DN = "CN=alice,OU=Clients,O=Test Org,C=US"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return make_tls_material(tmp_path_factory.mktemp("tls"))


def tls_broker(tmp_path: Path, tls: TlsMaterial, **security: Any) -> InProcBroker:
    users = tmp_path / "users"
    users.write_text("alice=alice-secret\n")
    settings: dict[str, Any] = {
        "ssl_cert": str(tls.server_cert), "ssl_key": str(tls.server_key),
        "ssl_ca": str(tls.ca), "ssl_client_auth": "requested",
        "sasl_enabled_mechanisms": ("PLAIN",), "sasl_plain_users": str(users)}
    settings.update(security)
    return InProcBroker(tmp_path / "data", listeners=(
        Listener("127.0.0.1", 0, "SSL"), Listener("127.0.0.1", 0, "SASL_SSL"),
        Listener("127.0.0.1", 0)), security=SecurityConfig(**settings))


async def metadata(client: Any) -> MetadataResponse:
    return await client.call(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12,
                             MetadataResponse)


def principals(broker: InProcBroker) -> list[str]:
    return sorted(str(conn.principal) for conn in broker.broker.connections)


def test_client_certificate_subject_is_the_principal(tmp_path: Path, tls: TlsMaterial) -> None:
    cert, key = tls.client("alice", SUBJECT)

    async def main() -> None:
        async with tls_broker(tmp_path, tls) as b:
            ssl_port = b.broker.bound[0].port
            with_cert = await connect(ssl_port, client_tls(tls.ca, cert, key))
            assert (await metadata(with_cert)).brokers[0].port == ssl_port
            without = await connect(ssl_port, client_tls(tls.ca))
            await metadata(without)
            assert principals(b) == ["User:ANONYMOUS", f"User:{DN}"]
            assert {c.listener_name for c in b.broker.connections} == {"SSL"}
    run(main())


def test_mapping_rules_shorten_the_principal(tmp_path: Path, tls: TlsMaterial) -> None:
    cert, key = tls.client("bob", "/O=Test Org/OU=Clients/CN=Bob")

    async def main() -> None:
        rules = "RULE:^CN=([a-zA-Z]+),OU=Clients,.*$/$1/L,DEFAULT"
        async with tls_broker(tmp_path, tls, ssl_principal_mapping_rules=rules) as b:
            client = await connect(b.broker.bound[0].port, client_tls(tls.ca, cert, key))
            await metadata(client)
            assert principals(b) == ["User:bob"]
    run(main())


def test_no_matching_rule_refuses_the_connection(tmp_path: Path, tls: TlsMaterial) -> None:
    cert, key = tls.client("carol", "/CN=carol")

    async def main() -> None:
        async with tls_broker(tmp_path, tls, ssl_principal_mapping_rules="RULE:^O=(.*)$/$1/") as b:
            client = await connect(b.broker.bound[0].port, client_tls(tls.ca, cert, key))
            await client.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)
            assert await client.closed()
    run(main())


def test_required_client_auth_refuses_a_client_without_certificate(
        tmp_path: Path, tls: TlsMaterial) -> None:
    async def main() -> None:
        async with tls_broker(tmp_path, tls, ssl_client_auth="required") as b:
            with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
                client = await connect(b.broker.bound[0].port, client_tls(tls.ca))
                # TLS 1.3 reports the refusal on the first read, not in the handshake.
                await metadata(client)
    run(main())


def test_sasl_ssl_takes_the_principal_from_sasl(tmp_path: Path, tls: TlsMaterial) -> None:
    cert, key = tls.client("dave", "/CN=dave")

    async def main() -> None:
        async with tls_broker(tmp_path, tls) as b:
            port = b.broker.bound[1].port
            client = await connect(port, client_tls(tls.ca, cert, key))
            assert (await plain_login(client, "alice", "alice-secret")).error_code == 0
            assert (await metadata(client)).brokers[0].port == port
            assert principals(b) == ["User:alice"]
            bad = await connect(port, client_tls(tls.ca))
            assert (await plain_login(bad, "alice", "nope")).error_code == 58
            assert await bad.closed()
    run(main())


def test_a_stalled_tls_handshake_is_dropped_and_others_are_served(
        tmp_path: Path, tls: TlsMaterial) -> None:
    async def main() -> None:
        async with tls_broker(tmp_path, tls, ssl_handshake_timeout_ms=300) as b:
            port = b.broker.bound[0].port
            stalled = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
            stalled[0][1].write(b"\x16\x03\x01\x00\x05hel")  # half a ClientHello
            for _ in range(3):  # others connect and work while those hang
                client = await connect(port, client_tls(tls.ca))
                assert (await metadata(client)).brokers
                await client.close()
            deadline = time.monotonic() + 10
            for reader, _writer in stalled:
                data = await asyncio.wait_for(reader.read(), max(0.1, deadline - time.monotonic()))
                assert data == b""  # dropped by the broker after the handshake timeout
            assert b.broker.connection_limits.quotas.total == 0
    run(main())


def test_unreadable_key_material_fails_the_start_and_frees_the_port(tmp_path: Path,
                                                                    tls: TlsMaterial) -> None:
    import socket

    port = 0
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> None:
        broker = InProcBroker(tmp_path / "data", listeners=(Listener("127.0.0.1", port, "SSL"),),
                              security=SecurityConfig(ssl_cert=str(tmp_path / "missing.pem"),
                                                      ssl_key=str(tls.server_key)))
        with pytest.raises(OSError):
            await broker.__aenter__()
        with socket.socket() as again:  # nothing holds the listener's port any more
            again.bind(("127.0.0.1", port))
    run(main())
