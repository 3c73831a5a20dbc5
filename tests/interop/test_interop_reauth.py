"""KIP-368 re-authentication with real clients: with `--connections-max-reauth-ms 2000`,
confluent-kafka and the Java client keep one connection working for several session
lifetimes by re-authenticating on it (PLAIN and SCRAM-SHA-256 over SASL_SSL); the broker
logs each re-authentication and never has to close an expired session."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.certs import TlsMaterial, make_tls_material
from helpers.java import run_harness
from helpers.secure_clients import ClientSecurity

from groupcoord.cli import users as users_cli

pytestmark = pytest.mark.interop

LIFETIME_MS = 2000
ACTIVE_S = 7.0
REAUTH = re.compile(r"re-authentication of \S+ as User:alice with (\S+) complete")


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return make_tls_material(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def reauth_broker(tmp_path_factory: pytest.TempPathFactory,
                  tls: TlsMaterial) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("reauth-broker")
    users = base / "plain-users"
    users.write_text("alice=alice-secret\n")
    factory = BrokerFactory(base)
    broker = factory.create([
        "--listener", "SASL_SSL://127.0.0.1:0", *tls.serve_args(),
        "--sasl-plain-users", str(users), "--connections-max-reauth-ms", str(LIFETIME_MS)],
        start=False)
    assert users_cli.main(["add", "--data-dir", str(broker.data_dir), "--user", "alice",
                           "--password", "alice-secret"]) == 0
    broker.start()
    yield broker
    factory.close()


def reauthentications(broker: BrokerProcess, mechanism: str) -> int:
    return sum(1 for m in REAUTH.finditer(broker.log_text()) if m.group(1) == mechanism)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_confluent_producer_reauthenticates(reauth_broker: BrokerProcess, tls: TlsMaterial,
                                            mechanism: str) -> None:
    from confluent_kafka import Producer

    before = reauthentications(reauth_broker, mechanism)
    security = ClientSecurity("SASL_SSL", tls.ca, mechanism, "alice", "alice-secret")
    bootstrap = f"127.0.0.1:{reauth_broker.listener_port('SASL_SSL')}"
    errors: list[str] = []
    delivered: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0,
                         "error_cb": lambda e: errors.append(str(e)), **security.confluent()})
    deadline = time.monotonic() + ACTIVE_S
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(f"reauth-{mechanism}", b"x%d" % sent,
                         on_delivery=lambda e, m: errors.append(str(e)) if e else
                         delivered.append(m.offset()))
        sent += 1
        producer.poll(0.1)
    assert producer.flush(15) == 0
    assert not errors, errors[:3]
    assert sorted(delivered) == list(range(sent))
    assert reauthentications(reauth_broker, mechanism) - before >= 2
    assert "Disconnecting expired channel" not in reauth_broker.log_text()


@pytest.mark.timeout(60)
def test_java_consumer_reauthenticates(reauth_broker: BrokerProcess, tls: TlsMaterial,
                                       java_harness: object) -> None:
    security = ClientSecurity("SASL_SSL", tls.ca, "SCRAM-SHA-256", "alice", "alice-secret")
    bootstrap = f"127.0.0.1:{reauth_broker.listener_port('SASL_SSL')}"
    before = reauthentications(reauth_broker, "SCRAM-SHA-256")
    # Waits on fetches for records that never come, for several session lifetimes.
    run = run_harness("consume-assign", bootstrap, "--topic", "reauth-java", "--count", "1",
                      "--timeout-ms", str(int(ACTIVE_S * 1000)),
                      *[arg for k, v in security.java().items() for arg in ("--prop", f"{k}={v}")],
                      expect=(2,))
    assert not run.of("error")
    assert reauthentications(reauth_broker, "SCRAM-SHA-256") - before >= 2
    assert "Disconnecting expired channel" not in reauth_broker.log_text()
