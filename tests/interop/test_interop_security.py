"""Security must-show 2: the four clients over TLS and SASL_SSL (PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512) produce and read back; refused credentials fail with Kafka's error.

One broker serves the module with a PLAINTEXT, an SSL and a SASL_SSL listener. SCRAM users
are created in its data dir with `groupcoord users add` before it starts; PLAIN users come
from a users file. Each case produces a small workload to a topic of its own over the secured
listener and reads it back there (the records must come back intact, on the listener's own
advertised port). A wrong password must surface as Kafka's SASL_AUTHENTICATION_FAILED with
Kafka's message: `Authentication failed: Invalid username or password` for PLAIN, the
generic `Authentication failed during authentication due to invalid credentials with SASL
mechanism SCRAM-SHA-256` for SCRAM (Kafka never tells a SCRAM client which part was wrong).
What each client does with that answer:
- confluent-kafka: an error callback with code `_AUTHENTICATION` carrying the message;
- kafka-python: logs `SaslAuthenticationFailedError` with the message, then times out
  bootstrapping;
- aiokafka: logs `[Error 58] SaslAuthenticationFailed: <message>`, then raises
  `KafkaConnectionError`;
- Java: `SaslAuthenticationException` with the message.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.certs import TlsMaterial, make_tls_material
from helpers.clients import ConfluentAdapter
from helpers.secure_clients import ClientSecurity, adapter, auth_failure
from helpers.workload import Workload, check_consumed

from groupcoord.cli import users as users_cli

pytestmark = pytest.mark.interop

CLIENTS = ("confluent", "kafka-python", "aiokafka", "java")
RECORDS = 200
PASSWORD = "alice-secret"
SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
PLAIN_REFUSED = "Authentication failed: Invalid username or password"
SCRAM_REFUSED = ("Authentication failed during authentication due to invalid credentials "
                 "with SASL mechanism SCRAM-SHA-256")


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return make_tls_material(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory,
                  tls: TlsMaterial) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("secure-broker")
    users = base / "plain-users"
    users.write_text(f"alice={PASSWORD}\n")
    factory = BrokerFactory(base)
    broker = factory.create([
        "--listener", "SSL://127.0.0.1:0", "--listener", "SASL_SSL://127.0.0.1:0",
        *tls.serve_args("requested"), "--sasl-plain-users", str(users),
        "--sasl-enabled-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "--default-partitions", "2"], start=False)
    assert users_cli.main(["add", "--data-dir", str(broker.data_dir), "--user", "alice",
                           "--password", PASSWORD]) == 0
    broker.start()
    yield broker
    factory.close()


def security_for(case: str, tls: TlsMaterial, password: str = PASSWORD) -> ClientSecurity:
    if case == "SSL":
        return ClientSecurity("SSL", tls.ca)
    return ClientSecurity("SASL_SSL", tls.ca, case, "alice", password)


CASES = [(client, case) for client in CLIENTS for case in ("SSL", "PLAIN", *SCRAM)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("client", "case"), CASES, ids=[f"{c}-{k}" for c, k in CASES])
def test_produce_and_read_back_securely(secure_broker: BrokerProcess, tls: TlsMaterial,
                                        request: pytest.FixtureRequest, client: str,
                                        case: str) -> None:
    if client == "java":
        request.getfixturevalue("java_harness")
    listener = "SSL" if case == "SSL" else "SASL_SSL"
    bootstrap = f"127.0.0.1:{secure_broker.listener_port(listener)}"
    workload = Workload(topic=f"secure-{client}-{case}", count=RECORDS)
    client_adapter = adapter(client, security_for(case, tls))
    client_adapter.produce(bootstrap, workload, "none")
    records = client_adapter.consume_assign(bootstrap, workload.topic, 2, RECORDS)
    check_consumed(workload, records, 2)


REFUSALS = [(client, mechanism) for client in CLIENTS for mechanism in ("PLAIN", "SCRAM-SHA-256")]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("client", "mechanism"), REFUSALS,
                         ids=[f"{c}-{m}" for c, m in REFUSALS])
def test_wrong_password_is_refused_with_kafkas_error(secure_broker: BrokerProcess,
                                                     tls: TlsMaterial,
                                                     request: pytest.FixtureRequest,
                                                     client: str, mechanism: str) -> None:
    if client == "java":
        request.getfixturevalue("java_harness")
    bootstrap = f"127.0.0.1:{secure_broker.listener_port('SASL_SSL')}"
    topic = f"refused-{client}-{mechanism}"
    reported = auth_failure(client, bootstrap, security_for(mechanism, tls, "wrong"), topic)
    expected = PLAIN_REFUSED if mechanism == "PLAIN" else SCRAM_REFUSED
    assert expected in reported, reported
    marker = {"confluent": "_AUTHENTICATION", "kafka-python": "SaslAuthenticationFailedError",
              "aiokafka": "[Error 58] SaslAuthenticationFailed",
              "java": "SaslAuthenticationException"}[client]
    assert marker in reported, reported
    assert "Failed authentication" in secure_broker.log_text()


@pytest.mark.timeout(120)
def test_oauthbearer_unsecured_token_of_librdkafka(secure_broker: BrokerProcess,
                                                   tls: TlsMaterial) -> None:
    """librdkafka mints its own unsecured JWS (alg none, sub, exp, iat); the broker validates
    it as Kafka's unsecured validator does. (The Java client's OAUTHBEARER login module needs
    jackson-databind, which the harness classpath does not carry.)"""
    client_adapter = ConfluentAdapter({
        **ClientSecurity("SASL_SSL", tls.ca).confluent(), "sasl.mechanism": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": "principal=svc"})
    bootstrap = f"127.0.0.1:{secure_broker.listener_port('SASL_SSL')}"
    workload = Workload(topic="secure-oauth-confluent", count=50)
    client_adapter.produce(bootstrap, workload, "none")
    check_consumed(workload, client_adapter.consume_assign(bootstrap, workload.topic, 2, 50), 2)


def test_plaintext_listener_still_serves(secure_broker: BrokerProcess, tmp_path: Path) -> None:
    workload = Workload(topic="secure-plaintext", count=20)
    plain = adapter("confluent", ClientSecurity("PLAINTEXT"))
    plain.produce(secure_broker.bootstrap, workload, "none")
    check_consumed(workload, plain.consume_assign(secure_broker.bootstrap, workload.topic, 2, 20),
                   2)


@pytest.mark.timeout(120)
def test_scram_users_managed_online_with_an_admin_client(secure_broker: BrokerProcess,
                                                         tls: TlsMaterial) -> None:
    """confluent-kafka's AdminClient adds a SCRAM-SHA-512 user (AlterUserScramCredentials
    with the client's SaltedPassword), describes it, and the new user produces and reads
    back at once; then the credential is deleted and the login is refused."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": secure_broker.bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", info, b"carol-secret")])
    futures["carol"].result(timeout=30)
    described = admin.describe_user_scram_credentials(["carol"])
    carol = described["carol"].result(timeout=30)
    assert [(c.mechanism, c.iterations) for c in carol.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)]
    bootstrap = f"127.0.0.1:{secure_broker.listener_port('SASL_SSL')}"
    security = ClientSecurity("SASL_SSL", tls.ca, "SCRAM-SHA-512", "carol", "carol-secret")
    workload = Workload(topic="secure-online-user", count=20)
    carol_client = adapter("confluent", security)
    carol_client.produce(bootstrap, workload, "none")
    check_consumed(workload, carol_client.consume_assign(bootstrap, workload.topic, 2, 20), 2)
    admin.alter_user_scram_credentials([UserScramCredentialDeletion(
        "carol", ScramMechanism.SCRAM_SHA_512)])["carol"].result(timeout=30)
    refused = auth_failure("confluent", bootstrap, security, "secure-online-user")
    assert ("Authentication failed during authentication due to invalid credentials with "
            "SASL mechanism SCRAM-SHA-512") in refused
