"""ACLs with real clients over SASL_PLAINTEXT (PLAIN): confluent-kafka (librdkafka 2.16), the
Java 3.9.1 client, kafka-python and aiokafka against a broker running the standard
authorizer, `User:admin` its super user. The admin creates topics and ACLs with confluent-kafka's AdminClient
(CreateAcls/DescribeAcls); then, per principal:

- a consumer group (classic and KIP-848 protocols) and a share group work for a principal
  with GROUP READ and TOPIC READ;
- without GROUP READ the clients get GROUP_AUTHORIZATION_FAILED;
- without TOPIC READ (or DESCRIBE) the topic is refused with TOPIC_AUTHORIZATION_FAILED;
- ListGroups shows only the groups the principal may describe;
- after a restart the ACLs are still there and still enforced.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from helpers import java
from helpers.broker import BrokerFactory, BrokerProcess

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

ck = pytest.importorskip("confluent_kafka")
adm = pytest.importorskip("confluent_kafka.admin")

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
TOPIC, RECORDS = "acl-orders", 60


class Secured:
    """The broker, its SASL port, and client configs per user."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker.listener_port('SASL_PLAINTEXT')}"

    def conf(self, user: str, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN", "sasl.username": user,
                "sasl.password": USERS[user], **extra}

    def java_props(self, user: str) -> list[str]:
        jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{user}" password="{USERS[user]}";')
        return ["--prop", "security.protocol=SASL_PLAINTEXT", "--prop", "sasl.mechanism=PLAIN",
                "--prop", f"sasl.jaas.config={jaas}"]

    def admin(self) -> Any:
        return adm.AdminClient(self.conf("admin"))

    def grant(self, *bindings: tuple[Any, str, Any, str]) -> None:
        """(resource type, name, operation, principal) ALLOW literal ACLs, as the admin."""
        acls = [adm.AclBinding(rt, name, adm.ResourcePatternType.LITERAL, f"User:{user}", "*",
                               op, adm.AclPermissionType.ALLOW)
                for rt, name, op, user in bindings]
        admin = self.admin()  # kept referenced until the futures are done
        for fut in admin.create_acls(acls).values():
            fut.result(timeout=30)


@pytest.fixture
def secured(broker_factory: BrokerFactory, tmp_path: Path) -> Secured:
    users = tmp_path / "plain-users"
    users.write_text("".join(f"{u}={p}\n" for u, p in USERS.items()))
    broker = broker_factory.create([
        "--listener", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-enabled-mechanisms", "PLAIN",
        "--sasl-plain-users", str(users), "--authorizer", "standard",
        "--super-users", "User:admin", "--group-initial-rebalance-delay-ms", "0"])
    s = Secured(broker)
    admin = s.admin()
    for fut in admin.create_topics([adm.NewTopic(TOPIC, 3, 1)]).values():
        fut.result(timeout=30)
    producer = ck.Producer(s.conf("admin"))
    for i in range(RECORDS):
        producer.produce(TOPIC, str(i).encode(), partition=i % 3)
    assert producer.flush(30) == 0
    return s


def consume(s: Secured, user: str, group: str, protocol: str = "classic",
            want: int = RECORDS, timeout_s: float = 45.0) -> tuple[set[int], list[Any]]:
    """(record ids consumed, client errors) for one confluent-kafka group member."""
    consumer = ck.Consumer(s.conf(user, **{"group.id": group, "group.protocol": protocol,
                                            "auto.offset.reset": "earliest",
                                            "enable.auto.commit": False}))
    consumer.subscribe([TOPIC])
    seen: set[int] = set()
    errors: list[Any] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(seen) < want and not errors:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(msg.error().code())
                continue
            seen.add(int(msg.value()))
            consumer.commit(msg, asynchronous=False)
    except ck.KafkaException as exc:
        errors.append(exc.args[0].code())
    finally:
        consumer.close()
    return seen, errors


def test_confluent_consumer_groups_under_acls(secured: Secured) -> None:
    s = secured
    s.grant((adm.ResourceType.GROUP, "app-classic", adm.AclOperation.READ, "alice"),
            (adm.ResourceType.GROUP, "app-848", adm.AclOperation.READ, "alice"),
            (adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.READ, "alice"),
            (adm.ResourceType.GROUP, "bob-group", adm.AclOperation.READ, "bob"))
    for group, protocol in (("app-classic", "classic"), ("app-848", "consumer")):
        seen, errors = consume(s, "alice", group, protocol)
        assert not errors and seen == set(range(RECORDS)), (protocol, errors)
    # bob: no READ on alice's group.
    _, errors = consume(s, "bob", "app-classic", want=1, timeout_s=20)
    assert ck.KafkaError.GROUP_AUTHORIZATION_FAILED in errors
    # bob: READ on his group, none on the topic: the topic is refused.
    for protocol in ("classic", "consumer"):
        _, errors = consume(s, "bob", "bob-group", protocol, want=1, timeout_s=20)
        assert ck.KafkaError.TOPIC_AUTHORIZATION_FAILED in errors, (protocol, errors)


def test_list_groups_hides_groups_the_principal_may_not_describe(secured: Secured) -> None:
    s = secured
    s.grant((adm.ResourceType.GROUP, "seen-by-alice", adm.AclOperation.READ, "alice"),
            (adm.ResourceType.GROUP, "hidden-from-alice", adm.AclOperation.READ, "bob"),
            (adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.READ, "alice"),
            (adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.READ, "bob"))
    assert consume(s, "alice", "seen-by-alice", want=1)[1] == []
    assert consume(s, "bob", "hidden-from-alice", want=1)[1] == []

    def listed(user: str) -> set[str]:
        admin = adm.AdminClient(s.conf(user))
        result = admin.list_consumer_groups().result(timeout=30)
        return {g.group_id for g in result.valid}
    assert listed("alice") == {"seen-by-alice"}
    assert listed("bob") == {"hidden-from-alice"}
    assert listed("admin") >= {"seen-by-alice", "hidden-from-alice"}


def set_share_reset(s: Secured, group: str) -> None:
    entry = adm.ConfigEntry("share.auto.offset.reset", "earliest",
                            incremental_operation=adm.AlterConfigOpType.SET)
    resource = adm.ConfigResource(adm.ResourceType.GROUP, group, incremental_configs=[entry])
    admin = s.admin()
    for fut in admin.incremental_alter_configs([resource]).values():
        fut.result(timeout=30)


def share_consume(s: Secured, user: str, group: str, want: int,
                  timeout_s: float = 45.0) -> tuple[set[int], list[Any]]:
    consumer = ck.ShareConsumer(s.conf(user, **{"group.id": group}))
    consumer.subscribe([TOPIC])
    seen: set[int] = set()
    errors: list[Any] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(seen) < want and not errors:
            for msg in consumer.poll(0.5):
                if msg.error() is not None:
                    errors.append(msg.error().code())
                else:
                    seen.add(int(msg.value()))
    except ck.KafkaException as exc:
        errors.append(exc.args[0].code())
    finally:
        consumer.close()
    return seen, errors


def test_confluent_share_group_under_acls(secured: Secured) -> None:
    s = secured
    set_share_reset(s, "shares")
    s.grant((adm.ResourceType.GROUP, "shares", adm.AclOperation.READ, "alice"),
            (adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.READ, "alice"))
    seen, errors = share_consume(s, "alice", "shares", RECORDS)
    assert not errors and seen == set(range(RECORDS))
    _, errors = share_consume(s, "bob", "shares", 1, timeout_s=20)
    assert ck.KafkaError.GROUP_AUTHORIZATION_FAILED in errors


def test_java_consumer_and_share_groups_under_acls(secured: Secured, java_harness: Path,
                                                   tmp_path: Path) -> None:
    s = secured
    set_share_reset(s, "java-shares")
    s.grant((adm.ResourceType.GROUP, "java-app", adm.AclOperation.READ, "alice"),
            (adm.ResourceType.GROUP, "java-app-848", adm.AclOperation.READ, "alice"),
            (adm.ResourceType.GROUP, "java-shares", adm.AclOperation.READ, "alice"),
            (adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.READ, "alice"),
            (adm.ResourceType.GROUP, "java-bob", adm.AclOperation.READ, "bob"))
    for group, protocol in (("java-app", "classic"), ("java-app-848", "consumer")):
        run = java.run_harness("consume-group", s.bootstrap, "--topic", TOPIC, "--group", group,
                               "--group-protocol", protocol, "--count", str(RECORDS),
                               *s.java_props("alice"))
        assert {int(java.decode_record(e).value or b"-1") for e in run.of("record")} == \
            set(range(RECORDS)), protocol
    no_group = java.run_harness("consume-group", s.bootstrap, "--topic", TOPIC, "--group",
                                "java-denied", "--group-protocol", "consumer", "--count", "1",
                                "--timeout-ms", "20000", *s.java_props("alice"), expect=(1,))
    assert "Not authorized to access group" in no_group.of("error")[-1]["message"]
    denied = java.run_harness("consume-group", s.bootstrap, "--topic", TOPIC, "--group",
                              "java-bob", "--count", "1", "--timeout-ms", "20000",
                              *s.java_props("bob"), expect=(1,))
    assert "Not authorized to access topics" in denied.of("error")[-1]["message"]
    marks = tmp_path / "marks"
    marks.mkdir()
    shared = java.run_harness("share-consume", s.bootstrap, "--topic", TOPIC, "--group",
                              "java-shares", "--dir", str(marks), "--limit", "1",
                              "--timeout-ms", "30000", *s.java_props("alice"))
    assert {e["id"] for e in shared.of("share-record")} == set(range(RECORDS))


def test_acls_survive_a_restart(secured: Secured) -> None:
    s = secured
    s.grant((adm.ResourceType.GROUP, "durable", adm.AclOperation.READ, "alice"),
            (adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.READ, "alice"))
    s.broker.restart()
    pattern = adm.AclBindingFilter(adm.ResourceType.ANY, None, adm.ResourcePatternType.ANY,
                                   None, None, adm.AclOperation.ANY, adm.AclPermissionType.ANY)
    admin = s.admin()
    after = admin.describe_acls(pattern).result(timeout=30)
    assert {(a.name, a.principal, a.operation) for a in after} == {
        ("durable", "User:alice", adm.AclOperation.READ),
        (TOPIC, "User:alice", adm.AclOperation.READ)}
    seen, errors = consume(s, "alice", "durable")
    assert not errors and seen == set(range(RECORDS))
    _, errors = consume(s, "bob", "durable", want=1, timeout_s=20)
    assert ck.KafkaError.GROUP_AUTHORIZATION_FAILED in errors


def kafka_python_consume(s: Secured, user: str, group: str, want: int,
                         timeout_s: float = 30.0) -> set[int]:
    """Record ids a kafka-python group member reads (it raises on authorization errors)."""
    kafka = pytest.importorskip("kafka")
    consumer = kafka.KafkaConsumer(
        TOPIC, bootstrap_servers=s.bootstrap, group_id=group, security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN", sasl_plain_username=user, sasl_plain_password=USERS[user],
        auto_offset_reset="earliest", enable_auto_commit=False)
    seen: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(seen) < want:
            for records in consumer.poll(timeout_ms=500).values():
                seen.update(int(r.value) for r in records)
            consumer.commit()
    finally:
        consumer.close()
    return seen


async def aiokafka_consume(s: Secured, user: str, group: str, want: int,
                           timeout_s: float = 30.0) -> set[int]:
    aiokafka = pytest.importorskip("aiokafka")
    consumer = aiokafka.AIOKafkaConsumer(
        TOPIC, bootstrap_servers=s.bootstrap, group_id=group, security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN", sasl_plain_username=user, sasl_plain_password=USERS[user],
        auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    seen: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(seen) < want:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                seen.update(int(r.value) for r in records)
            await consumer.commit()
    finally:
        await consumer.stop()
    return seen


def test_kafka_python_and_aiokafka_groups_under_acls(secured: Secured) -> None:
    import asyncio

    from aiokafka.errors import GroupAuthorizationFailedError as AioGroupDenied
    from kafka.errors import GroupAuthorizationFailedError

    s = secured
    s.grant((adm.ResourceType.GROUP, "kp-app", adm.AclOperation.READ, "alice"),
            (adm.ResourceType.GROUP, "aio-app", adm.AclOperation.READ, "alice"),
            (adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.READ, "alice"),
            # bob may read the topic (aiokafka asks for its metadata before joining) but
            # not the groups.
            (adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.READ, "bob"))
    assert kafka_python_consume(s, "alice", "kp-app", RECORDS) == set(range(RECORDS))
    with pytest.raises(GroupAuthorizationFailedError):
        kafka_python_consume(s, "bob", "kp-app", 1)
    assert asyncio.run(aiokafka_consume(s, "alice", "aio-app", RECORDS)) == set(range(RECORDS))
    with pytest.raises(AioGroupDenied):
        asyncio.run(aiokafka_consume(s, "bob", "aio-app", 1))


def fetch_partition(s: Secured, user: str, timeout_s: float = 20.0) -> tuple[int, list[Any]]:
    """(records fetched, client errors) for a confluent-kafka consumer reading partition 0
    by assignment (no group join, so only the Fetch path is authorized)."""
    consumer = ck.Consumer(s.conf(user, **{"group.id": f"{user}-assign",
                                            "enable.auto.commit": False}))
    consumer.assign([ck.TopicPartition(TOPIC, 0, ck.OFFSET_BEGINNING)])
    fetched, errors = 0, []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and not fetched and not errors:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(msg.error().code())
            else:
                fetched += 1
    finally:
        consumer.close()
    return fetched, errors


def produce_one(s: Secured, user: str) -> Any:
    """The delivery error of one record (None when written)."""
    outcome: list[Any] = []
    producer = ck.Producer(s.conf(user, **{"message.timeout.ms": 15_000}))
    producer.produce(TOPIC, b"from-alice", partition=0,
                     on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(20)
    assert len(outcome) == 1
    return None if outcome[0] is None else outcome[0].code()


def test_a_deny_from_the_clients_host_stops_fetch_and_produce(secured: Secured) -> None:
    s = secured
    s.grant((adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.READ, "alice"),
            (adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.WRITE, "alice"),
            (adm.ResourceType.GROUP, "alice-assign", adm.AclOperation.READ, "alice"))
    fetched, errors = fetch_partition(s, "alice")
    assert fetched and not errors, errors
    assert produce_one(s, "alice") is None
    # Kafka matches an ACL's host against the client's bare address: 127.0.0.1 here.
    denials = [adm.AclBinding(adm.ResourceType.TOPIC, TOPIC, adm.ResourcePatternType.LITERAL,
                              principal, host, op, adm.AclPermissionType.DENY)
               for principal, host, op in (("User:alice", "127.0.0.1", adm.AclOperation.READ),
                                           ("User:alice", "127.0.0.0/8",
                                            adm.AclOperation.WRITE))]
    admin = s.admin()
    for fut in admin.create_acls(denials).values():
        fut.result(timeout=30)
    _, errors = fetch_partition(s, "alice")
    assert ck.KafkaError.TOPIC_AUTHORIZATION_FAILED in errors, errors
    assert produce_one(s, "alice") == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED
    log = s.broker.log_text()
    for op, request, rule_host in (("READ", "Fetch", "127.0.0.1"),
                                   ("WRITE", "Produce", "127.0.0.0/8")):
        line = (f"Principal = User:alice is Denied operation = {op} from host = 127.0.0.1 on "
                f"resource = Topic:LITERAL:{TOPIC} for request = {request}")
        assert line in log, line
        assert f"host={rule_host}, operation={op}, permissionType=DENY]" in log, rule_host
    # A DENY from another host leaves bob's grant from anywhere alone.
    s.grant((adm.ResourceType.TOPIC, TOPIC, adm.AclOperation.READ, "bob"),
            (adm.ResourceType.GROUP, "bob-assign", adm.AclOperation.READ, "bob"))
    for fut in admin.create_acls([adm.AclBinding(
            adm.ResourceType.TOPIC, TOPIC, adm.ResourcePatternType.LITERAL, "User:bob",
            "10.1.2.3", adm.AclOperation.READ, adm.AclPermissionType.DENY)]).values():
        fut.result(timeout=30)
    fetched, errors = fetch_partition(s, "bob")
    assert fetched and not errors, errors
