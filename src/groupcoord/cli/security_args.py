"""`groupcoord serve` options for listeners, TLS and SASL (Kafka's config names in the help).

`--listen HOST:PORT` (repeatable) stays a PLAINTEXT listener; `--listener NAME://HOST:PORT`
adds named listeners. `--advertised-listener` takes `NAME://HOST:PORT` per listener name,
or the old `HOST:PORT` for the first listener.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from groupcoord.cli.options import Option
from groupcoord.security.config import SecurityConfig, parse_mechanisms
from groupcoord.server.config import Listener

#: The listener, TLS and SASL options of `groupcoord serve`, in the order of `--help`.
OPTIONS: tuple[Option, ...] = (
    Option("--listener", kind="append", default=[], metavar="NAME://HOST:PORT",
           help="a listener; NAME is PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL or a "
                "name in --listener-security-protocol-map (repeatable; listeners)"),
    Option("--listener-security-protocol-map", default="", metavar="NAME:PROTO,...",
           help="security protocol of custom listener names "
                "(listener.security.protocol.map)"),
    Option("--ssl-cert", default=None, metavar="PEM",
           help="server certificate chain (ssl.keystore.location)"),
    Option("--ssl-key", default=None, metavar="PEM", help="server private key"),
    Option("--ssl-ca", default=None, metavar="PEM",
           help="CA certificates to verify client certificates "
                "(ssl.truststore.location)"),
    Option("--ssl-client-auth", choices=("none", "requested", "required"),
           default="none", help="client certificates (ssl.client.auth)"),
    Option("--ssl-principal-mapping-rules", default="DEFAULT", metavar="RULES",
           help="certificate subject -> principal name (ssl.principal.mapping.rules)"),
    Option("--ssl-handshake-timeout-ms", type=int, default=None,
           help="drop a client that has not finished TLS in this time (default 10000)"),
    Option("--sasl-enabled-mechanisms", default=None, metavar="M1,M2",
           help="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (unsecured tokens; "
                "for tests) (sasl.enabled.mechanisms; default the SCRAM ones, plus "
                "PLAIN with --sasl-plain-users)"),
    Option("--sasl-plain-users", default=None, metavar="FILE",
           help="PLAIN users, one name=password per line"),
    Option("--connections-max-reauth-ms", type=int, default=0,
           help="SASL session lifetime; clients re-authenticate before it ends, "
                "0 = never (connections.max.reauth.ms)"),
    Option("--connection-failed-authentication-delay-ms", type=int, default=100,
           help="close a connection this long after its failed authentication was "
                "answered (connection.failed.authentication.delay.ms)"),
)


def listeners_from_args(listen: list[str] | None, named: list[str]) -> tuple[Listener, ...]:
    plain = [Listener.parse(text) for text in (listen or [])]
    listeners = tuple(plain + [Listener.parse(text) for text in named])
    return listeners or (Listener("127.0.0.1", 9092),)


#: The options that name a file the broker reads at start-up.
FILE_OPTIONS = ("--ssl-cert", "--ssl-key", "--ssl-ca", "--sasl-plain-users")


def check_files(ns: SimpleNamespace) -> None:
    """ValueError naming the option and the path of a file that is not there."""
    values = vars(ns)
    for opt in OPTIONS:
        path = values[opt.dest] if opt.flag in FILE_OPTIONS else None
        if path is not None and not os.path.isfile(path):
            raise ValueError(f"{opt.flag} {path}: no such file")


def config_kwargs(ns: SimpleNamespace) -> dict[str, Any]:
    """The BrokerConfig fields these options set; ValueError for bad values."""
    listeners = listeners_from_args(ns.listen, ns.listener)
    advertised = [Listener.parse(text, default_name=listeners[0].name)
                  for text in ns.advertised_listener or []]
    old_form = [a for a, text in zip(advertised, ns.advertised_listener or [], strict=True)
                if "://" not in text]
    security = SecurityConfig(
        ssl_cert=ns.ssl_cert, ssl_key=ns.ssl_key, ssl_ca=ns.ssl_ca,
        ssl_client_auth=ns.ssl_client_auth,
        ssl_principal_mapping_rules=ns.ssl_principal_mapping_rules,
        **({"ssl_handshake_timeout_ms": ns.ssl_handshake_timeout_ms}
           if ns.ssl_handshake_timeout_ms is not None else {}),
        sasl_enabled_mechanisms=(parse_mechanisms(ns.sasl_enabled_mechanisms)
                                 if ns.sasl_enabled_mechanisms else None),
        sasl_plain_users=ns.sasl_plain_users,
        connections_max_reauth_ms=ns.connections_max_reauth_ms,
        connection_failed_authentication_delay_ms=ns.connection_failed_authentication_delay_ms)
    return {
        "listeners": listeners,
        "advertised_listener": old_form[-1] if old_form else None,
        "advertised_listeners": tuple(a for a in advertised if a not in old_form),
        "listener_security_protocol_map": ns.listener_security_protocol_map,
        "security": security,
    }
