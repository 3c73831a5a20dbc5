"""`groupcoord acls add|list|remove` against a broker subprocess with the standard authorizer,
logged in over SASL_PLAINTEXT with PLAIN as the super user, as kafka-acls.sh would be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.broker import BrokerFactory, BrokerProcess

from groupcoord.cli import main as cli_main
from groupcoord.cli.acls import operation
from groupcoord.security.acl import AclOperation

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def sasl_broker(broker_factory: BrokerFactory, tmp_path: Path) -> tuple[BrokerProcess, str]:
    users = tmp_path / "plain-users"
    users.write_text("admin=admin-secret\nalice=alice-secret\n")
    broker = broker_factory.create([
        "--listener", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-enabled-mechanisms", "PLAIN",
        "--sasl-plain-users", str(users), "--authorizer", "standard",
        "--super-users", "User:admin"])
    return broker, f"127.0.0.1:{broker.listener_port('SASL_PLAINTEXT')}"


def acls(capsys: pytest.CaptureFixture[str], command: str, bootstrap: str, *args: str,
         user: str = "admin") -> tuple[int, str, str]:
    code = cli_main.main(["acls", command, "--bootstrap", bootstrap,
                          "--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "PLAIN",
                          "--sasl-username", user, "--sasl-password", f"{user}-secret", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_operation_names_as_kafka_acls_takes_them() -> None:
    assert operation("Read") is AclOperation.READ
    assert operation("DescribeConfigs") is AclOperation.DESCRIBE_CONFIGS
    assert operation("idempotent_write") is AclOperation.IDEMPOTENT_WRITE
    with pytest.raises(ValueError):
        operation("Any")


def test_add_list_remove(sasl_broker: tuple[BrokerProcess, str],
                         capsys: pytest.CaptureFixture[str]) -> None:
    _, bootstrap = sasl_broker
    code, out, err = acls(capsys, "add", bootstrap, "--allow-principal", "User:alice",
                          "--operation", "Read", "--operation", "Describe",
                          "--topic", "orders", "--group", "app-", "--resource-pattern-type",
                          "prefixed")
    assert code == 0, err
    assert "Added 4 of 4 ACLs" in out
    code, out, _ = acls(capsys, "list", bootstrap, "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted((r["resource_type"], r["resource_name"], r["operation"]) for r in rows) == [
        ("GROUP", "app-", "DESCRIBE"), ("GROUP", "app-", "READ"),
        ("TOPIC", "orders", "DESCRIBE"), ("TOPIC", "orders", "READ")]
    assert {r["pattern_type"] for r in rows} == {"PREFIXED"}
    # alice may not manage ACLs: DescribeAcls needs DESCRIBE on the cluster.
    code, _, err = acls(capsys, "list", bootstrap, user="alice")
    assert code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in err
    code, out, _ = acls(capsys, "remove", bootstrap, "--topic", "orders",
                        "--resource-pattern-type", "prefixed", "--operation", "Read")
    assert code == 0 and "Removed 1 ACLs" in out
    code, out, _ = acls(capsys, "remove", bootstrap, "--group", "app-",
                        "--resource-pattern-type", "prefixed")
    assert code == 0 and "Removed 2 ACLs" in out
    code, out, _ = acls(capsys, "list", bootstrap)
    assert out.splitlines() == [
        "TOPIC:PREFIXED:orders User:alice ALLOW DESCRIBE from host *"]


def test_a_wrong_password_and_bad_input_fail_cleanly(sasl_broker: tuple[BrokerProcess, str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    _, bootstrap = sasl_broker
    code = cli_main.main(["acls", "list", "--bootstrap", bootstrap, "--security-protocol",
                          "SASL_PLAINTEXT", "--sasl-username", "admin", "--sasl-password", "no"])
    assert code == 1 and "SASL_AUTHENTICATION_FAILED" in capsys.readouterr().err
    code, _, err = acls(capsys, "add", bootstrap, "--allow-principal", "alice",
                        "--operation", "Read", "--topic", "t")
    assert code == 1 and "INVALID_REQUEST" in err  # no `User:` prefix, as Kafka refuses it


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_login(broker_factory: BrokerFactory, capsys: pytest.CaptureFixture[str],
                     mechanism: str) -> None:
    broker = broker_factory.create([
        "--listener", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-enabled-mechanisms", mechanism,
        "--authorizer", "standard", "--super-users", "User:admin"], start=False)
    assert cli_main.main(["users", "add", "--data-dir", str(broker.data_dir), "--user", "admin",
                          "--password", "admin-secret"]) == 0
    broker.start()
    bootstrap = f"127.0.0.1:{broker.listener_port('SASL_PLAINTEXT')}"
    capsys.readouterr()
    base = ["--bootstrap", bootstrap, "--security-protocol", "SASL_PLAINTEXT",
            "--sasl-mechanism", mechanism, "--sasl-username", "admin"]
    assert cli_main.main(["acls", "add", *base, "--sasl-password", "admin-secret",
                          "--allow-principal", "User:alice", "--operation", "Write",
                          "--transactional-id", "tx"]) == 0
    assert cli_main.main(["acls", "list", *base, "--sasl-password", "admin-secret"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "TRANSACTIONAL_ID:LITERAL:tx User:alice ALLOW WRITE from host *")
    assert cli_main.main(["acls", "list", *base, "--sasl-password", "wrong"]) == 1
    assert "SASL_AUTHENTICATION_FAILED" in capsys.readouterr().err


def test_over_sasl_ssl(broker_factory: BrokerFactory, tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:
    from helpers.certs import make_tls_material

    tls = make_tls_material(tmp_path / "tls")
    users = tmp_path / "plain-users"
    users.write_text("admin=admin-secret\n")
    broker = broker_factory.create([
        "--listener", "SASL_SSL://127.0.0.1:0", "--sasl-enabled-mechanisms", "PLAIN",
        "--sasl-plain-users", str(users), *tls.serve_args(), "--authorizer", "standard",
        "--super-users", "User:admin"])
    bootstrap = f"127.0.0.1:{broker.listener_port('SASL_SSL')}"
    code = cli_main.main(["acls", "add", "--bootstrap", bootstrap, "--security-protocol",
                          "SASL_SSL", "--ssl-ca", str(tls.ca), "--sasl-username", "admin",
                          "--sasl-password", "admin-secret", "--allow-principal", "User:bob",
                          "--operation", "Describe", "--cluster"])
    out = capsys.readouterr().out
    assert code == 0 and "Added 1 of 1 ACLs" in out
    # Without the CA the broker's certificate is not trusted: a clean error, no traceback.
    code = cli_main.main(["acls", "list", "--bootstrap", bootstrap, "--security-protocol",
                          "SASL_SSL", "--sasl-username", "admin", "--sasl-password", "x"])
    assert code == 1 and "CERTIFICATE_VERIFY_FAILED" in capsys.readouterr().err


def test_kafka_acls_command_line(sasl_broker: tuple[BrokerProcess, str],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`kafka-acls.sh --bootstrap-server B --add ...`: the broker before the action, the
    action as an option."""
    _, bootstrap = sasl_broker
    login = ["--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "PLAIN",
             "--sasl-username", "admin", "--sasl-password", "admin-secret"]
    assert cli_main.main(["acls", "--bootstrap-server", bootstrap, "--add", *login,
                          "--allow-principal", "User:bob", "--operation", "Read",
                          "--topic", "payments"]) == 0
    assert "Added 1 of 1 ACLs" in capsys.readouterr().out
    assert cli_main.main(["acls", "--bootstrap-server", bootstrap, "--list", *login]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "TOPIC:LITERAL:payments User:bob ALLOW READ from host *"]
    assert cli_main.main(["acls", "list", "--bootstrap-server", bootstrap, *login]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    with pytest.raises(SystemExit) as missing:
        cli_main.main(["acls", "--list", *login])
    assert missing.value.code == 2
    assert "--bootstrap-server" in capsys.readouterr().err
