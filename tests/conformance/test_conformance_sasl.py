"""SASL and the SCRAM credential APIs, differentially: the same raw frames to Apache Kafka 4.4
(a KRaft broker with a SASL_PLAINTEXT listener, PLAIN users in its JAAS line and SCRAM users
added with AlterUserScramCredentials) and to groupcoord, each step's answer (or the close of
the connection) compared.

Normalised away: Kafka's order of the enabled mechanisms (a HashSet's iteration order) and
of AlterUserScramCredentials error results (a HashMap's), the random part of the SCRAM
server nonce and the salt; everything else (codes, messages, session lifetimes, which
requests close the connection) must match.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.broker import BrokerFactory, free_port
from helpers.polling import wait_for_async
from helpers.reference_broker import ReferenceBroker
from helpers.sasl_wire import (
    ScramClient,
    connect,
    oauth_initial_response,
    token_for,
    unsecured_jws,
)
from server.broker_inproc import RawClient

from groupcoord.security.scram import salted_password
from groupcoord.wire.generated.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    UserName,
)
from groupcoord.wire.generated.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from groupcoord.wire.generated.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from groupcoord.wire.generated.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse

pytestmark = pytest.mark.reference

MECHANISMS = "PLAIN,SCRAM-SHA-256,OAUTHBEARER"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
OAUTH_JAAS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
              'unsecuredLoginStringClaim_sub="broker";')
CLOSE_WAIT_S = 3.0


class SaslReferenceBroker(ReferenceBroker):
    """The reference broker with a SASL_PLAINTEXT listener next to its PLAINTEXT one."""

    def __init__(self, base_dir: Path) -> None:
        super().__init__(base_dir, {
            "sasl.enabled.mechanisms": MECHANISMS,
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
        })
        self.sasl_port = free_port()

    def properties(self) -> dict[str, str]:
        props = super().properties()
        sasl = f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
        props["listeners"] += f",{sasl}"
        props["advertised.listeners"] += f",{sasl}"
        props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        return props


@dataclass(frozen=True)
class Peer:
    name: str
    plain_port: int
    sasl_port: int


def upsert(name: str, mechanism: int = 1, iterations: int = 4096,
           password: bytes = b"alice-secret") -> ScramCredentialUpsertion:
    salt = b"0123456789abcdef"
    return ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations,
                                    salt=salt, salted_password=salted_password(
                                        "sha256", password, salt, iterations))


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


async def add_alice(peer: Peer) -> None:
    """The SCRAM user both brokers share; waits until the broker's image has it."""
    admin = await connect(peer.plain_port)
    answer = await admin.call(AlterUserScramCredentialsRequest(
        deletions=[], upsertions=[upsert("alice")]), 0, AlterUserScramCredentialsResponse)
    assert [r.error_code for r in answer.results] == [0], answer
    async def described() -> bool:
        found = await admin.call(DescribeUserScramCredentialsRequest(
            users=[UserName(name="alice")]), 0, DescribeUserScramCredentialsResponse)
        return bool(found.results and found.results[0].error_code == 0)

    # The credential reaches the reference broker's SASL layer through its controller.
    await wait_for_async(described, "alice's SCRAM credential", 30, interval=0.1)
    await admin.close()


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Peer, Peer]]:
    kafka = SaslReferenceBroker(tmp_path_factory.mktemp("kafka-sasl"))
    kafka.start()
    base = tmp_path_factory.mktemp("groupcoord-sasl")
    users = base / "users"
    users.write_text("alice=alice-secret\n")
    factory = BrokerFactory(base)
    ours = factory.create(["--listener", "SASL_PLAINTEXT://127.0.0.1:0",
                           "--sasl-enabled-mechanisms", MECHANISMS,
                           "--sasl-plain-users", str(users)])
    pair = (Peer("kafka", kafka.port, kafka.sasl_port),
            Peer("groupcoord", ours.port, ours.listener_port("SASL_PLAINTEXT")))
    try:
        for peer in pair:
            run(add_alice(peer))
        yield pair
    finally:
        factory.close()
        kafka.stop()


# -- one step of a conversation, normalised ----------------------------------------------------


def _fields(response: Any) -> dict[str, Any]:
    out = {}
    # ApiVersions: the security APIs' entries; features and other APIs differ by design.
    names = (("error_code", "api_keys") if isinstance(response, ApiVersionsResponse)
             else response._FIELDS)
    for name in names:
        value = getattr(response, name)
        if name == "mechanisms":
            value = sorted(value)
        if name == "api_keys":  # the security APIs; the others differ by design
            value = sorted((k.api_key, k.min_version, k.max_version) for k in value
                           if k.api_key in (17, 36, 50, 51))
        out[name] = value
    return out


async def step(client: RawClient, request: Any, version: int, response_cls: Any) -> Any:
    """The normalised answer to one request, or "closed"."""
    try:
        await client.send(request, version)
        _, response = await client.recv(response_cls, version, timeout=10)
    except (asyncio.IncompleteReadError, ConnectionError):
        return "closed"
    return _fields(response)


async def closed(client: RawClient) -> bool:
    return await client.closed(timeout=CLOSE_WAIT_S)


Conversation = Callable[[Peer], Awaitable[list[Any]]]


def differential(peers: tuple[Peer, Peer], conversation: Conversation) -> list[Any]:
    kafka, ours = (run(conversation(peer)) for peer in peers)
    assert ours == kafka, f"\nkafka:      {kafka}\ngroupcoord: {ours}"
    return kafka


def auth(token: bytes, version: int = 2) -> tuple[Any, int, Any]:
    return SaslAuthenticateRequest(auth_bytes=token), version, SaslAuthenticateResponse


def shake(mechanism: str, version: int = 1) -> tuple[Any, int, Any]:
    return SaslHandshakeRequest(mechanism=mechanism), version, SaslHandshakeResponse


METADATA = (MetadataRequest(topics=[], allow_auto_topic_creation=False), 12, MetadataResponse)


async def steps(port: int, *requests: tuple[Any, int, Any], then_closed: bool = True,
                ) -> list[Any]:
    client = await connect(port)
    transcript = [await step(client, *r) for r in requests]
    if then_closed:
        transcript.append(("closed", await closed(client)))
    await client.close()
    return transcript


# -- the conversations ------------------------------------------------------------------------


def test_versions_of_the_security_apis(peers: tuple[Peer, Peer]) -> None:
    async def talk(peer: Peer) -> list[Any]:
        client = await connect(peer.sasl_port)
        versions = await client.call(ApiVersionsRequest(client_software_name="c",
                                                        client_software_version="1"), 3,
                                     ApiVersionsResponse)
        await client.close()
        return [versions.error_code, sorted((k.api_key, k.min_version, k.max_version)
                                            for k in versions.api_keys
                                            if k.api_key in (17, 36, 50, 51))]

    assert differential(peers, talk)[1] == [(17, 0, 1), (36, 0, 2), (50, 0, 0), (51, 0, 0)]


def test_api_versions_of_an_unknown_version_then_login(peers: tuple[Peer, Peer]) -> None:
    """An ApiVersions newer than the broker's is answered at v0 with UNSUPPORTED_VERSION
    (KIP-511) and the client may ask again before its handshake."""
    async def talk(peer: Peer) -> list[Any]:
        client = await connect(peer.sasl_port)
        request = ApiVersionsRequest(client_software_name="c", client_software_version="1")
        head = (18).to_bytes(2, "big") + (99).to_bytes(2, "big") + (7).to_bytes(4, "big")
        body = head + (1).to_bytes(2, "big") + b"c" + b"\0" + request.encode(3)
        await client.send_raw(len(body).to_bytes(4, "big") + body)
        frame = await client.read_frame()
        refused, _ = ApiVersionsResponse.decode(frame, 4, 0)
        out: list[Any] = [int.from_bytes(frame[:4], "big"), refused.error_code,
                          [(k.api_key, k.min_version) for k in refused.api_keys]]
        out.append(await step(client, request, 3, ApiVersionsResponse))
        out.append(await step(client, *shake("PLAIN")))
        out.append(await step(client, *auth(b"\0alice\0alice-secret")))
        await client.close()
        return out

    result = differential(peers, talk)
    assert result[:2] == [7, 35] and result[5]["error_code"] == 0


def test_unknown_mechanism(peers: tuple[Peer, Peer]) -> None:
    result = differential(peers, lambda p: steps(p.sasl_port, shake("GSSAPI")))
    assert result[0]["error_code"] == 33 and result[1] == ("closed", True)


@pytest.mark.parametrize("token", [b"\0alice\0wrong", b"\0mallory\0x", b"no separators",
                                   b"\0alice\0", b"other\0alice\0alice-secret"])
def test_plain_refusals(peers: tuple[Peer, Peer], token: bytes) -> None:
    result = differential(peers, lambda p: steps(p.sasl_port, shake("PLAIN"), auth(token)))
    assert result[1]["error_code"] == 58 and result[2] == ("closed", True)


def test_plain_success_then_sasl_requests_are_illegal(peers: tuple[Peer, Peer]) -> None:
    result = differential(peers, lambda p: steps(
        p.sasl_port, shake("PLAIN"), auth(b"\0alice\0alice-secret"), shake("PLAIN"),
        auth(b"\0alice\0alice-secret"), then_closed=False))
    assert [r["error_code"] for r in result] == [0, 0, 34, 34]


def test_plain_with_handshake_v0_and_raw_tokens(peers: tuple[Peer, Peer]) -> None:
    async def talk(peer: Peer) -> list[Any]:
        client = await connect(peer.sasl_port)
        out: list[Any] = [await step(client, *shake("PLAIN", 0))]
        token = b"\0alice\0alice-secret"
        await client.send_raw(len(token).to_bytes(4, "big") + token)
        out.append(await client.read_frame())
        answer = await step(client, *METADATA)
        out.append(answer != "closed" and len(answer["brokers"]))
        await client.close()
        return out

    assert differential(peers, talk)[1:] == [b"", 1]


def test_requests_out_of_place_close_the_connection(peers: tuple[Peer, Peer]) -> None:
    versions = (ApiVersionsRequest(client_software_name="c", client_software_version="1"), 3,
                ApiVersionsResponse)
    before = differential(peers, lambda p: steps(p.sasl_port, METADATA))
    assert before == ["closed", ("closed", True)]
    twice = differential(peers, lambda p: steps(p.sasl_port, versions, versions))
    assert twice[1:] == ["closed", ("closed", True)]
    stray = differential(peers, lambda p: steps(p.sasl_port, shake("PLAIN"),
                                                (ListGroupsRequest(), 4, ListGroupsResponse)))
    assert stray[1]["error_code"] == 34 and stray[2] == ("closed", True)


def test_metadata_in_place_of_the_authentication(peers: tuple[Peer, Peer]) -> None:
    """Kafka answers the stray request with its error response, which for Metadata names
    every requested topic with ILLEGAL_SASL_STATE, then closes."""
    for version in (12, 4, 1):
        named = (MetadataRequest(topics=[MetadataRequestTopic(name="a"),
                                         MetadataRequestTopic(name="b")],
                                 allow_auto_topic_creation=False), version, MetadataResponse)
        result = differential(peers, lambda p, named=named: steps(  # type: ignore[misc]
            p.sasl_port, shake("PLAIN"), named))
        topics = result[1]["topics"]
        assert [(t.name, t.error_code) for t in topics] == [("a", 34), ("b", 34)], version
        assert result[2] == ("closed", True)


def test_scram_exchange(peers: tuple[Peer, Peer]) -> None:
    async def talk(peer: Peer, password: str) -> list[Any]:
        client = await connect(peer.sasl_port)
        scram = ScramClient("SCRAM-SHA-256", "alice", password, nonce="clientnonce123")
        out: list[Any] = [await step(client, *shake("SCRAM-SHA-256"))]
        first = await step(client, *auth(scram.first()))
        fields = dict(item.split("=", 1) for item in first["auth_bytes"].decode().split(","))
        out.append((first["error_code"], fields["r"].startswith("clientnonce123"),
                    len(base64.b64decode(fields["s"])), fields["i"]))
        final = await step(client, *auth(scram.final(first["auth_bytes"])))
        out.append((final["error_code"], final["error_message"],
                    final["error_code"] == 0 and scram.server_final_ok(final["auth_bytes"])))
        out.append(("closed", await closed(client)) if final["error_code"] else "open")
        await client.close()
        return out

    ok = differential(peers, lambda p: talk(p, "alice-secret"))
    assert ok[2] == (0, "", True)
    refused = differential(peers, lambda p: talk(p, "wrong"))
    assert refused[2][0] == 58 and refused[3] == ("closed", True)


def test_scram_with_a_forged_nonce(peers: tuple[Peer, Peer]) -> None:
    async def talk(peer: Peer) -> list[Any]:
        client = await connect(peer.sasl_port)
        scram = ScramClient("SCRAM-SHA-256", "alice", "alice-secret", nonce="clientnonce123")
        await step(client, *shake("SCRAM-SHA-256"))
        first = await step(client, *auth(scram.first()))
        final = await step(client, *auth(scram.final(first["auth_bytes"], "clientnonce123x")))
        return [final, ("closed", await closed(client))]

    assert differential(peers, talk)[0]["error_code"] == 58


def test_oversized_frame_before_authentication(peers: tuple[Peer, Peer]) -> None:
    async def talk(peer: Peer) -> list[Any]:
        client = await connect(peer.sasl_port)
        out = [await step(client, *shake("PLAIN"))]
        await client.send_raw((524288 + 1).to_bytes(4, "big") + b"\0" * 4096)
        out.append(("closed", await closed(client)))
        return out

    assert differential(peers, talk)[1] == ("closed", True)


def _lifetime_bucket(answer: Any) -> Any:
    if answer == "closed":
        return answer
    lifetime = answer["session_lifetime_ms"]
    return {**answer, "session_lifetime_ms": "0" if lifetime == 0 else
            "within the token's 60 s" if 50_000 <= lifetime <= 60_000 else lifetime}


@pytest.mark.parametrize("token", [
    "valid", "expired", "no exp", "alg HS256", "no sub", "signed", "not a jws"])
def test_oauthbearer_unsecured_tokens(peers: tuple[Peer, Peer], token: str) -> None:
    now = int(time.time())
    value = {"valid": token_for("svc", 60), "expired": token_for("svc", -10),
             "no exp": unsecured_jws({"sub": "svc", "iat": now}),
             "alg HS256": unsecured_jws({"sub": "svc", "exp": now + 60}, alg="HS256"),
             "no sub": unsecured_jws({"exp": now + 60}),
             "signed": unsecured_jws({"sub": "svc", "exp": now + 60}) + "c2ln",
             "not a jws": "abc"}[token]

    async def talk(peer: Peer) -> list[Any]:
        client = await connect(peer.sasl_port)
        out = [await step(client, *shake("OAUTHBEARER"))]
        first = _lifetime_bucket(await step(client, *auth(oauth_initial_response(value))))
        out.append(first)
        if first != "closed" and first["error_code"] == 0 and first["auth_bytes"]:
            out.append(await step(client, *auth(b"\x01")))
        out.append(("closed", await closed(client)))
        await client.close()
        return out

    differential(peers, talk)


def test_scram_unknown_user_and_garbage(peers: tuple[Peer, Peer]) -> None:
    for token in (b"n,,n=nobody,r=abc", b"n,,n=alice", b"y,,n=alice,r=abc", b"\xff\xfe"):
        result = differential(peers, lambda p, t=token: steps(p.sasl_port,
                                                              shake("SCRAM-SHA-256"), auth(t)))
        assert result[1]["error_code"] == 58 and result[2] == ("closed", True)


def test_sasl_requests_on_a_plaintext_listener(peers: tuple[Peer, Peer]) -> None:
    result = differential(peers, lambda p: steps(p.plain_port, shake("PLAIN"),
                                                 auth(b"\0alice\0alice-secret"),
                                                 then_closed=False))
    assert [r["error_code"] for r in result] == [34, 34]


def test_describe_user_scram_credentials(peers: tuple[Peer, Peer]) -> None:
    async def talk(peer: Peer) -> list[Any]:
        client = await connect(peer.plain_port)
        out = []
        for users in (["alice"], ["nobody"], ["alice", "alice", "nobody"]):
            answer = await client.call(DescribeUserScramCredentialsRequest(
                users=[UserName(name=u) for u in users]), 0, DescribeUserScramCredentialsResponse)
            out.append([answer.error_code, sorted(
                (r.user, r.error_code, r.error_message,
                 [(i.mechanism, i.iterations) for i in r.credential_infos])
                for r in answer.results)])
        await client.close()
        return out

    differential(peers, talk)


def test_alter_user_scram_credentials_errors(peers: tuple[Peer, Peer]) -> None:
    request = AlterUserScramCredentialsRequest(
        deletions=[ScramCredentialDeletion(name="nobody", mechanism=1),
                   ScramCredentialDeletion(name="twice", mechanism=1),
                   ScramCredentialDeletion(name="badmech", mechanism=7)],
        upsertions=[upsert("few", iterations=1024), upsert("many", iterations=20000),
                    upsert("", iterations=4096), upsert("twice"), upsert("unknown", 0),
                    upsert("zeta-ok", 2, 8192)])

    async def talk(peer: Peer) -> list[Any]:
        client = await connect(peer.plain_port)
        answer = await client.call(request, 0, AlterUserScramCredentialsResponse)
        cleanup = await client.call(AlterUserScramCredentialsRequest(
            deletions=[ScramCredentialDeletion(name="zeta-ok", mechanism=2)], upsertions=[]),
            0, AlterUserScramCredentialsResponse)
        await client.close()
        return [sorted((r.user, r.error_code, r.error_message) for r in answer.results),
                [(r.user, r.error_code) for r in cleanup.results]]

    result = differential(peers, talk)
    assert ("zeta-ok", 0, None) in result[0]

