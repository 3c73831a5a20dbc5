"""Client certificates with real clients: an SSL listener with `--ssl-client-auth required`
serves confluent-kafka and the Java client presenting a certificate signed by the broker's
client CA (the Java client from a PEM keystore), and refuses a client without one. (Which
principal the certificate maps to is checked in tests/server/test_tls_listener.py.) Also,
on the broker process as users run it (uvloop): connections that never finish the TLS
handshake are dropped after `--ssl-handshake-timeout-ms` while a real client is served."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.certs import TlsMaterial, make_tls_material
from helpers.clients import ConfluentAdapter
from helpers.java import JavaAdapter
from helpers.secure_clients import ClientSecurity
from helpers.workload import Workload, check_consumed

pytestmark = pytest.mark.interop

RECORDS = 100


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return make_tls_material(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def mtls_broker(tmp_path_factory: pytest.TempPathFactory,
                tls: TlsMaterial) -> Iterator[BrokerProcess]:
    factory = BrokerFactory(tmp_path_factory.mktemp("mtls-broker"))
    broker = factory.create(["--listener", "SSL://127.0.0.1:0", *tls.serve_args("required"),
                             "--ssl-handshake-timeout-ms", "1000"])
    yield broker
    factory.close()


@pytest.mark.timeout(120)
def test_confluent_with_a_client_certificate(mtls_broker: BrokerProcess,
                                             tls: TlsMaterial) -> None:
    cert, key = tls.client("confluent-client", "/O=Test/CN=confluent-client")
    client = ConfluentAdapter({**ClientSecurity("SSL", tls.ca).confluent(),
                               "ssl.certificate.location": str(cert),
                               "ssl.key.location": str(key)})
    bootstrap = f"127.0.0.1:{mtls_broker.listener_port('SSL')}"
    workload = Workload(topic="mtls-confluent", count=RECORDS)
    client.produce(bootstrap, workload, "none")
    check_consumed(workload, client.consume_assign(bootstrap, workload.topic, 1, RECORDS), 1)


@pytest.mark.timeout(120)
def test_java_with_a_pem_keystore(mtls_broker: BrokerProcess, tls: TlsMaterial,
                                  java_harness: object) -> None:
    cert, key = tls.client("java-client", "/O=Test/CN=java-client")
    keystore = tls.directory / "java-client-keystore.pem"
    keystore.write_text(key.read_text() + cert.read_text())
    client = JavaAdapter({**ClientSecurity("SSL", tls.ca).java(), "ssl.keystore.type": "PEM",
                          "ssl.keystore.location": str(keystore)})
    bootstrap = f"127.0.0.1:{mtls_broker.listener_port('SSL')}"
    workload = Workload(topic="mtls-java", count=RECORDS)
    client.produce(bootstrap, workload, "none")
    check_consumed(workload, client.consume_assign(bootstrap, workload.topic, 1, RECORDS), 1)


@pytest.mark.timeout(60)
def test_a_client_without_certificate_is_refused(mtls_broker: BrokerProcess,
                                                 tls: TlsMaterial) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{mtls_broker.listener_port('SSL')}",
                         **ClientSecurity("SSL", tls.ca).confluent()})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    assert "TLS handshake with 127.0.0.1 failed" in mtls_broker.log_text()


@pytest.mark.timeout(60)
def test_stalled_handshakes_are_dropped_while_clients_are_served(
        mtls_broker: BrokerProcess, tls: TlsMaterial) -> None:
    import socket
    import time

    port = mtls_broker.listener_port("SSL")
    stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
    cert, key = tls.client("busy-client", "/CN=busy-client")
    client = ConfluentAdapter({**ClientSecurity("SSL", tls.ca).confluent(),
                               "ssl.certificate.location": str(cert),
                               "ssl.key.location": str(key)})
    workload = Workload(topic="mtls-while-stalled", count=RECORDS)
    client.produce(f"127.0.0.1:{port}", workload, "none")
    check_consumed(workload, client.consume_assign(f"127.0.0.1:{port}", workload.topic, 1,
                                                   RECORDS), 1)
    deadline = time.monotonic() + 10
    for sock in stalled:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        assert sock.recv(1) == b""  # the broker hung up on it
        sock.close()
