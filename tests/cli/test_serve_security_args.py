"""`groupcoord serve` listener, TLS and SASL options: what they become in the config, and the
mistakes refused before the broker starts."""

from __future__ import annotations

import pytest

from groupcoord.cli.serve import build_parser, config_from_args
from groupcoord.server.config import BrokerConfig, Listener


def config(*args: str, tmp: str) -> BrokerConfig:
    return config_from_args(build_parser().parse_args(["--data-dir", tmp, *args]))


def test_listeners_protocols_and_advertised(tmp_path: object) -> None:
    cfg = config("--listen", "127.0.0.1:9092", "--listener", "SASL_SSL://0.0.0.0:9093",
                 "--listener", "internal://10.0.0.1:9094",
                 "--listener-security-protocol-map", "INTERNAL:SASL_PLAINTEXT",
                 "--advertised-listener", "SASL_SSL://kafka.example.com:19093",
                 "--ssl-cert", "c.pem", "--ssl-key", "k.pem",
                 "--sasl-enabled-mechanisms", "scram-sha-512", tmp=str(tmp_path))
    assert cfg.listeners == (Listener("127.0.0.1", 9092), Listener("0.0.0.0", 9093, "SASL_SSL"),
                             Listener("10.0.0.1", 9094, "INTERNAL"))
    assert [cfg.security_protocol(lst) for lst in cfg.listeners] == [
        "PLAINTEXT", "SASL_SSL", "SASL_PLAINTEXT"]
    assert cfg.advertised_for(1, 9093) == Listener("kafka.example.com", 19093, "SASL_SSL")
    assert cfg.advertised_for(2, 9094) == Listener("10.0.0.1", 9094, "INTERNAL")
    assert cfg.security.enabled_mechanisms == ("SCRAM-SHA-512",)
    assert cfg.security.connection_failed_authentication_delay_ms == 100


def test_default_mechanisms(tmp_path: object) -> None:
    plain = config("--listener", "SASL_PLAINTEXT://127.0.0.1:0", tmp=str(tmp_path))
    assert plain.security.enabled_mechanisms == ("SCRAM-SHA-256", "SCRAM-SHA-512")
    with_users = config("--listener", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-plain-users", "u",
                        tmp=str(tmp_path))
    assert with_users.security.enabled_mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.mark.parametrize("args,reason", [
    (["--listener", "SSL://127.0.0.1:0"], "--ssl-cert"),
    (["--listener", "CUSTOM://127.0.0.1:0"], "security protocol map"),
    (["--listener-security-protocol-map", "X:TLS"], "NAME:PROTOCOL"),
    (["--advertised-listener", "SSL://h:1"], "advertised listener SSL has no listener"),
    (["--sasl-enabled-mechanisms", "GSSAPI"], "unsupported SASL mechanism"),
    (["--sasl-enabled-mechanisms", "PLAIN"], "--sasl-plain-users"),
    (["--ssl-client-auth", "required"], "--ssl-ca"),
    (["--listener", "bad name://h:1"], "listener name"),
    (["--connections-max-reauth-ms", "-1"], "reauth"),
])
def test_refused_before_start(tmp_path: object, args: list[str], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        config(*args, tmp=str(tmp_path))
